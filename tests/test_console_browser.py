"""The console in a real browser: headless Chromium (Debian's package) driven by Playwright.

One console (the server ``console`` runs, in a thread) and one browser for the module. The
agent is a real server of its own on the console's store file (another runtime than the
console's: what it raises reaches the console through the store's change feed): it must reach
the open queue page over SSE, without a reload, and the answer given in the page
must reach its waiting ``get_escalation``.

Screenshots go to the test's folder; with ``CONSOLE_SCREENSHOTS=DIR`` set they go to DIR
(docs/images holds the ones the docs show).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, run_async
from http_support import OPERATOR_TOKEN

pytestmark = pytest.mark.interop

playwright_sync = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
if not shutil.which(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)", allow_module_level=True)

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Bounds on waiting for the page (milliseconds): generous for a loaded 2-core machine.
WAIT_MS = 20_000
HOSTILE = 'TypeError: <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> in render()'


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-browser")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, console: RunningConsole) -> Iterator[Any]:
    """A logged-in page on the queue."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    opened.goto(f"{console.url}/")
    assert opened.url.endswith("/login")
    opened.fill("input[name=token]", OPERATOR_TOKEN)
    opened.click("button[type=submit]")
    opened.wait_for_url(f"{console.url}/")
    try:
        yield opened
    finally:
        context.close()


def screenshot_path(tmp_path: Path, name: str) -> Path:
    folder = Path(os.environ.get("CONSOLE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


class WaitingAgent(threading.Thread):
    """An agent that asks a question and waits for the answer with get_escalation."""

    def __init__(self, db_path: str, task_id: str) -> None:
        super().__init__(daemon=True)
        self.db_path = db_path
        self.task_id = task_id
        self.answer: dict[str, Any] | None = None
        self.acknowledge = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            anyio.run(self._ask)
        except BaseException as exc:  # noqa: BLE001 (handed to the test thread, which raises it)
            self.failure = exc

    async def _ask(self) -> None:
        async with connect(self.db_path) as agent:
            await agent.call(
                "start_task", title="Migrate the session store", task_id=self.task_id, project="web"
            )
            raised = await agent.call(
                "raise_escalation",
                task_id=self.task_id,
                reason="Sessions: keep them in SQLite or move them to Redis?",
                question="Where should sessions live?",
                options=["SQLite, as today", "Redis"],
            )
            escalation_id = raised["escalation"]["escalation_id"]
            got = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=60)
            self.answer = got
            await anyio.to_thread.run_sync(self.acknowledge.wait, 30)
            await agent.call("acknowledge_response", escalation_id=escalation_id)


def test_an_agents_question_appears_live_is_answered_in_the_page_and_reaches_the_waiting_agent(
    page: Any, console: RunningConsole, tmp_path: Path
) -> None:
    page.wait_for_selector("body[data-live=connected]")
    page.evaluate("window.sameDocument = true")
    agent = WaitingAgent(console.db_path, "browser-live")
    agent.start()
    row = page.locator("#queue tr", has_text="browser-live")
    row.wait_for()
    assert page.evaluate("window.sameDocument") is True  # it came without a reload
    assert page.inner_text("#queue .count") == "1 escalation in the queue."  # the count came with it
    assert "waiting for you" in row.inner_text()
    assert "question from the agent" in row.inner_text()
    assert "web" in row.inner_text()
    page.screenshot(path=str(screenshot_path(tmp_path, "console-queue.png")), full_page=True)

    row.locator("a").first.click()
    page.wait_for_selector("form.answer")
    assert "Where should sessions live?" in page.inner_text("main")
    page.check("input[name=response_type][value=guidance]")
    page.fill("textarea[name=content]", "Keep SQLite; Redis is one more service to run.")
    page.screenshot(path=str(screenshot_path(tmp_path, "console-escalation.png")), full_page=True)
    with page.expect_navigation():
        page.click("form.answer button[type=submit]")
    page.evaluate("window.sameDocument = true")

    agent_deadline = threading.Event()
    page.locator("#answer-state", has_text="console:operator").wait_for()
    for _ in range(200):  # bounded: the agent's waiting call returns within its poll interval
        if agent.answer is not None or agent.failure is not None:
            break
        agent_deadline.wait(0.1)
    assert agent.failure is None, agent.failure
    assert agent.answer is not None
    response = agent.answer["escalation"]["response"]
    assert response["content"] == "Keep SQLite; Redis is one more service to run."
    assert response["responder"] == "console:operator"

    agent.acknowledge.set()
    agent.join(timeout=30)
    assert agent.failure is None, agent.failure
    # Received and acknowledged: the page says so without a reload.
    playwright_sync.expect(page.locator("#answer-state dd", has_text="not yet")).to_have_count(
        0, timeout=WAIT_MS
    )
    assert page.evaluate("window.sameDocument") is True


def test_an_error_holding_a_script_tag_and_an_onerror_attribute_renders_as_text(
    page: Any, console: RunningConsole
) -> None:
    async def fail_three_times() -> int:
        async with connect(console.db_path) as agent:
            await agent.call("start_task", title="Render the chart", task_id="browser-xss")
            for _ in range(3):
                result = await agent.call("record_failure", task_id="browser-xss", message=HOSTILE)
        return int(result["escalation"]["escalation_id"])

    escalation_id = run_async(fail_three_times)
    row = page.locator("#queue tr", has_text="browser-xss")
    row.wait_for()
    assert "<script>window.pwned = 1</script>" in row.inner_text()
    page.goto(f"{console.url}/escalations/{escalation_id}")
    main = page.inner_text("main")
    assert 'onerror="window.pwned = 2"' in main
    assert page.evaluate("window.pwned") is None
    assert page.locator("main img").count() == 0
    assert page.locator("main script").count() == 0


def test_an_escalation_link_opened_logged_out_lands_on_that_escalation_after_the_login(
    browser: Any, console: RunningConsole
) -> None:
    async def ask() -> int:
        async with connect(console.db_path) as agent:
            await agent.call("start_task", title="Pick a queue", task_id="browser-next")
            raised = await agent.call(
                "raise_escalation", task_id="browser-next", reason="RabbitMQ or SQS for the job queue?"
            )
        return int(raised["escalation"]["escalation_id"])

    escalation_id = run_async(ask)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        opened = context.new_page()
        opened.set_default_timeout(WAIT_MS)
        opened.goto(f"{console.url}/escalations/{escalation_id}")  # the link a notifier sent
        assert "/login?next=" in opened.url
        opened.fill("input[name=token]", OPERATOR_TOKEN)
        opened.click("button[type=submit]")
        opened.wait_for_url(f"{console.url}/escalations/{escalation_id}")
        assert "RabbitMQ or SQS for the job queue?" in opened.inner_text("main")
        assert OPERATOR_TOKEN not in opened.url
    finally:
        context.close()


def test_a_change_made_before_the_page_follows_the_feed_still_reaches_the_page(
    page: Any, console: RunningConsole
) -> None:
    # The page is rendered, then the change happens, then its stream opens: no change comes
    # on the stream, yet the page must show it.
    held: list[Any] = []
    page.route("**/events", lambda route: held.append(route))  # noqa: PLW0108 (a bound method is refused)
    page.reload()
    for _ in range(200):  # bounded: the reloaded page opens its stream at once
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page did not open its stream"

    async def ask() -> None:
        async with connect(console.db_path) as agent:
            await agent.call("start_task", title="Rotate the keys", task_id="browser-missed", project="web")
            await agent.call(
                "raise_escalation",
                task_id="browser-missed",
                reason="Which key store?",
                question="Which key store?",
            )

    # A page whose stream is open: once it shows the change, the change has been published.
    witness = page.context.new_page()
    witness.goto(f"{console.url}/")
    witness.wait_for_selector("body[data-live=connected]")
    run_async(ask)
    witness.locator("#queue tr", has_text="browser-missed").wait_for()
    held[0].continue_()
    page.locator("#queue tr", has_text="browser-missed").wait_for()
