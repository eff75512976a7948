"""Every page of the console in a real browser (Debian's Chromium, driven by Playwright), as an
accessibility engine (axe-core, from npm) and a person at 800 and 1,440 px see it: no serious
or critical violation, header links readable (contrast at least 4.5:1), no word broken across
two lines, the queue reflowed into cards at 800 px; and the operator's flow: log in, open a
repeated error, read its whole error, answer with a verdict, see the waiting agent receive it.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from axe_support import BROKEN_PATHS, BROKEN_WORDS, axe_source, contrast, violations
from conftest import connect
from console_support import RunningConsole, console_in_thread, run_async
from escalation_kinds import Raised, raise_every_kind
from http_support import OPERATOR_TOKEN, TEST_TOKENS, token_digest

pytestmark = pytest.mark.interop

playwright_sync = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
if not shutil.which(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)", allow_module_level=True)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
WAIT_MS = 20_000
WIDTHS = (800, 1440, 1920)
# An agent's id as hosts make them, and paths as deep as a real repository's: neither may
# push a column of the queue out of sight or be cut inside a name.
LONG_AGENT = "claude-code-3f9a7c2e-5b1d-4e8f-9a6b-0c2d4e6f8a1b"
LONG_PATHS = [
    "services/billing/invoices/tests/test_invoice_rounding_per_currency.py",
    "services/billing/invoices/src/invoice_rounding/per_currency_rules.py",
]


# An operator who may see two of the tasks: their stats page says so and counts those only.
SCOPED_OPERATOR = "scoped-" + "5" * 40
SCOPED_TOKENS = f"""
[[tokens]]
name = "scoped"
role = "operator"
sha256 = "{token_digest(SCOPED_OPERATOR)}"
task_prefixes = ["kinds-repeat", "kinds-files"]
"""


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    folder = tmp_path_factory.mktemp("console-a11y")
    tokens = folder / "tokens.toml"
    tokens.write_text(SCOPED_TOKENS, encoding="utf-8")
    env = {**os.environ, **TEST_TOKENS, "ESCALATION_TOKENS_FILE": str(tokens)}
    with console_in_thread(folder, env=env) as running:
        yield running


async def _answered_and_deep(db_path: str) -> dict[str, int]:
    """A question of an agent with a long id, answered by an operator and not yet
    acknowledged (the queue's longest state), on a task that modified deep paths."""
    async with connect(db_path) as agent:
        await agent.call(
            "start_task",
            title="Round invoices",
            task_id="kinds-paths",
            project="billing",
            agent_id=LONG_AGENT,
        )
        await agent.call(
            "report_progress",
            task_id="kinds-paths",
            files_modified=LONG_PATHS,
            tests_passed=3,
            tests_failed=1,
        )
        asked = await agent.call(
            "raise_escalation", task_id="kinds-paths", reason="Round per line or per invoice?"
        )
    escalation_id = int(asked["escalation"]["escalation_id"])
    async with connect(db_path, role="operator") as operator:
        await operator.call(
            "resolve_escalation", escalation_id=escalation_id, response_type="guidance", content="Per line."
        )
    return {"answered": escalation_id}


@pytest.fixture(scope="module")
def raised(console: RunningConsole) -> Raised:
    made = run_async(lambda: raise_every_kind(console.db_path))
    made.ids.update(run_async(lambda: _answered_and_deep(console.db_path)))
    return made


@pytest.fixture(scope="module")
def axe() -> str:
    return axe_source()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def logged_in_page(browser: Any, console: RunningConsole, width: int, token: str = OPERATOR_TOKEN) -> Any:
    """A page ``width`` px wide logged in with ``token`` (its context lets the test add axe's script)."""
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{console.url}/login")
    page.fill("input[name=token]", token)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{console.url}/")
    return page


def every_page(raised: Raised) -> list[str]:
    """The console's pages: the queue, each kind of escalation, a task, the whole error, the lists."""
    escalations = [f"/escalations/{escalation_id}" for escalation_id in raised.ids.values()]
    return [
        "/",
        *escalations,
        "/tasks/kinds-stall",
        "/tasks/kinds-paths",
        "/failures/F-1",
        "/answered",
        "/stats",
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_has_a_serious_or_critical_accessibility_violation(
    browser: Any, console: RunningConsole, raised: Raised, axe: str, width: int
) -> None:
    page = logged_in_page(browser, console, width)
    try:
        found = {}
        for path in ["/login", *every_page(raised)]:
            page.goto(f"{console.url}{path}")
            found[path] = violations(page, axe)
    finally:
        page.context.close()
    scoped = logged_in_page(browser, console, width, SCOPED_OPERATOR)
    try:
        scoped.goto(f"{console.url}/stats")
        assert "tasks whose id starts with kinds-repeat or kinds-files" in scoped.inner_text("main")
        found["/stats, as an operator with a scope"] = violations(scoped, axe)
    finally:
        scoped.context.close()
    assert {path: seen for path, seen in found.items() if seen} == {}


@pytest.mark.parametrize("width", WIDTHS)
def test_no_word_and_no_name_in_a_path_is_broken_across_lines(
    browser: Any, console: RunningConsole, raised: Raised, width: int
) -> None:
    page = logged_in_page(browser, console, width)
    try:
        broken = {}
        for path in every_page(raised):
            page.goto(f"{console.url}{path}")
            broken[path] = page.evaluate(BROKEN_WORDS) + page.evaluate(BROKEN_PATHS)
        found = {path: words for path, words in broken.items() if words}
        assert found == {}, found
    finally:
        page.context.close()


# Where each cell of the queue ends, and whether anything scrolls sideways.
QUEUE_LAYOUT = """() => ({
  page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  queue: (s => s.scrollWidth - s.clientWidth)(document.querySelector("#queue .scroll")),
  rightmost: Math.max(...[...document.querySelectorAll("#queue td")].map(
    td => td.getBoundingClientRect().right)),
  header: getComputedStyle(document.querySelector("table.queue thead")).position,
  cells: document.querySelectorAll("#queue td").length,
  table: document.querySelector("table.queue").getBoundingClientRect().width,
  // a cell whose content does not fit it: cut, or hidden behind the next one
  overflowing: [...document.querySelectorAll("#queue td, #queue th")].filter(
    cell => cell.scrollWidth > cell.clientWidth + 1).map(cell => cell.innerText),
  agents: [...document.querySelectorAll("#queue td[data-label=Agent]")].map(td => td.innerText),
})"""


def screenshot(page: Any, folder: Path, name: str, *, whole: bool = True) -> None:
    """The page as a PNG in ``CONSOLE_SCREENSHOTS`` (docs/images holds the ones the docs show),
    else in the test's folder."""
    chosen = Path(os.environ.get("CONSOLE_SCREENSHOTS") or folder)
    chosen.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(chosen / name), full_page=whole)


def test_the_queue_reflows_at_800_px_and_is_a_table_using_the_whole_window_at_1440_and_1920_px(
    browser: Any, console: RunningConsole, raised: Raised, tmp_path: Path
) -> None:
    for width in WIDTHS:
        page = logged_in_page(browser, console, width)
        try:
            page.goto(f"{console.url}/")
            layout = page.evaluate(QUEUE_LAYOUT)
            if width == 800:
                screenshot(page, tmp_path, "console-queue-800.png", whole=False)
            else:
                page.goto(f"{console.url}/stats")
                screenshot(page, tmp_path, "console-stats.png")
                page.goto(f"{console.url}/tasks/kinds-verify#timeline")
                screenshot(page, tmp_path, "console-task.png")
        finally:
            page.context.close()
        assert layout["cells"] >= 9 * len(raised.ids)
        assert layout["page"] == 0, (width, layout)
        assert layout["queue"] == 0, (width, layout)  # nothing to scroll to: every column in view
        assert layout["rightmost"] <= width, (width, layout)
        assert layout["overflowing"] == [], (width, layout)
        assert LONG_AGENT in layout["agents"], (width, layout)  # whole, in one piece of text
        if width > 800:  # a wide window is used, not left empty beside a capped page
            assert layout["table"] >= width - 80, (width, layout)
        # At 800 px each escalation is a card of labelled lines (the header row is for screen
        # readers only); at 1,440 and 1,920 px the queue is a table with its header.
        assert layout["header"] == ("absolute" if width == 800 else "static"), (width, layout)


def test_the_header_links_are_readable_on_the_header(browser: Any, console: RunningConsole) -> None:
    page = logged_in_page(browser, console, 1440)
    try:
        background = page.eval_on_selector("header", "e => getComputedStyle(e).backgroundColor")
        for name in ("Queue", "Answered", "Stats"):
            colour = page.locator("header nav a", has_text=name).evaluate("e => getComputedStyle(e).color")
            assert contrast(colour, background) >= 4.5, (name, colour, background)
    finally:
        page.context.close()


class WaitingAgent(threading.Thread):
    """The agent of a repeated error, waiting for the operator's answer in get_escalation."""

    def __init__(self, db_path: str, escalation_id: int) -> None:
        super().__init__(daemon=True)
        self.db_path = db_path
        self.escalation_id = escalation_id
        self.waiting = threading.Event()
        self.answer: dict[str, Any] | None = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            anyio.run(self._wait)
        except BaseException as exc:  # noqa: BLE001 (handed to the test thread, which raises it)
            self.failure = exc

    async def _wait(self) -> None:
        async with connect(self.db_path) as agent:
            self.waiting.set()
            self.answer = await agent.call(
                "get_escalation", escalation_id=self.escalation_id, wait_seconds=60
            )


def test_an_operator_reads_the_whole_error_answers_with_a_verdict_and_the_agent_receives_it(
    browser: Any, console: RunningConsole, raised: Raised
) -> None:
    escalation_id = raised.ids["repeated_error"]
    agent = WaitingAgent(console.db_path, escalation_id)
    agent.start()
    assert agent.waiting.wait(30)
    page = logged_in_page(browser, console, 1440)
    try:
        page.goto(f"{console.url}/escalations/{escalation_id}")
        page.click("text=The whole error")
        page.wait_for_url(f"{console.url}/failures/F-1")
        marked = page.locator("pre.output mark.salient").first
        assert marked.inner_text() == "E       assert 9 == 10"
        assert page.locator("section.occurrence").count() == 3
        page.go_back()
        page.check("input[name=response_type][value=guidance]")
        page.fill("textarea[name=content]", "Round each line's tax before summing.")
        page.check("input[name=verdict][value=useful]")
        with page.expect_navigation():
            page.click("form.answer button[type=submit]")
        page.locator("#answer-state", has_text="console:operator").wait_for()
        assert "useful, by console:operator" in page.inner_text("#answer-state")
        agent.join(timeout=60)
        assert agent.failure is None, agent.failure
        assert agent.answer is not None
        response = agent.answer["escalation"]["response"]
        assert response["content"] == "Round each line's tax before summing."
        assert response["responder"] == "console:operator"
        assert "verdict" not in json.dumps(agent.answer)  # the agent never reads the verdict
        # Received: the page says so without a reload.
        playwright_sync.expect(page.locator("#answer-state dd", has_text="not yet")).to_have_count(
            1, timeout=WAIT_MS
        )  # received, not yet acknowledged
    finally:
        page.context.close()


def test_the_pass_rate_bars_have_an_axis_and_each_bar_its_run_and_rate(
    browser: Any, console: RunningConsole, raised: Raised
) -> None:
    page = logged_in_page(browser, console, 1440)
    try:
        page.goto(f"{console.url}/escalations/{raised.ids['test_stall']}")
        chart = page.locator("figure.pass-rates").first
        texts = chart.locator("svg text").all_text_contents()
        caption = chart.locator("figcaption").inner_text()
        label = chart.locator("svg").get_attribute("aria-label") or ""
    finally:
        page.context.close()
    assert {"0%", "50%", "100%"} <= set(texts)  # the axis
    assert [text for text in texts if text.isdigit()] == ["1", "2", "3", "4", "5"]  # each run
    assert texts.count("60%") == 5  # each bar's rate
    assert "oldest first" in caption
    assert label.endswith("run 1 60%, run 2 60%, run 3 60%, run 4 60%, run 5 60%")


def test_an_answered_escalation_loses_the_alert_bar_and_sending_an_answer_says_it_was_sent(
    browser: Any, console: RunningConsole, raised: Raised
) -> None:
    page = logged_in_page(browser, console, 1440)
    alarm = "rgb(161, 38, 27)"  # --alarm
    try:
        page.goto(f"{console.url}/escalations/{raised.ids['budget']}")
        pending = page.eval_on_selector("p.headline", "e => getComputedStyle(e).borderLeftColor")
        assert page.locator("p.notice").count() == 0
        page.check("input[name=response_type][value=guidance]")
        page.fill("textarea[name=content]", "Go on; the budget was too tight.")
        with page.expect_navigation():
            page.click("form.answer button[type=submit]")
        notice = page.locator("p.notice[role=status]").inner_text()
        answered = page.eval_on_selector("p.headline", "e => getComputedStyle(e).borderLeftColor")
        page.check("input[name=verdict][value=false_alarm]")
        with page.expect_navigation():
            page.click("form.verdict button[type=submit]")
        judged = page.locator("p.notice[role=status]").inner_text()
        page.goto(f"{console.url}/escalations/{raised.ids['budget']}")
        later = page.locator("p.notice").count()  # the notice is for the page the answer landed on
    finally:
        page.context.close()
    assert pending == alarm
    assert answered != alarm
    assert notice.startswith("Your answer was sent.")
    assert judged == "Your verdict was kept: false alarm."
    assert later == 0
