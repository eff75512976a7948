"""Every page of the console in a real browser (Debian's Chromium, driven by Playwright), as an
accessibility engine (axe-core, from npm) and a person at 800 and 1,440 px see it: no serious
or critical violation, header links readable (contrast at least 4.5:1), no word broken across
two lines; and the whole error reached from a repeated error, then answered.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from axe_support import BROKEN_WORDS, axe_source, contrast, violations
from console_support import RunningConsole, console_in_thread, run_async
from escalation_kinds import Raised, raise_every_kind
from http_support import OPERATOR_TOKEN

playwright_sync = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
if not shutil.which(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)", allow_module_level=True)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
WAIT_MS = 20_000
WIDTHS = (800, 1440)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-a11y")) as running:
        yield running


@pytest.fixture(scope="module")
def raised(console: RunningConsole) -> Raised:
    return run_async(lambda: raise_every_kind(console.db_path))


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


def logged_in_page(browser: Any, console: RunningConsole, width: int) -> Any:
    """A logged-in page ``width`` px wide (its context lets the test add axe's script)."""
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{console.url}/login")
    page.fill("input[name=token]", OPERATOR_TOKEN)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{console.url}/")
    return page


def every_page(raised: Raised) -> list[str]:
    """The console's pages: the queue, each kind of escalation, a task, the whole error, the lists."""
    escalations = [f"/escalations/{escalation_id}" for escalation_id in raised.ids.values()]
    return ["/", *escalations, "/tasks/kinds-stall", "/failures/F-1", "/answered", "/stats"]


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
        assert {path: seen for path, seen in found.items() if seen} == {}
    finally:
        page.context.close()


def test_no_word_is_broken_across_lines_at_800_px(
    browser: Any, console: RunningConsole, raised: Raised
) -> None:
    page = logged_in_page(browser, console, 800)
    try:
        broken = {}
        for path in every_page(raised):
            page.goto(f"{console.url}{path}")
            broken[path] = page.evaluate(BROKEN_WORDS)
        found = {path: words for path, words in broken.items() if words}
        assert found == {}, found
    finally:
        page.context.close()


def test_the_header_links_are_readable_on_the_header(browser: Any, console: RunningConsole) -> None:
    page = logged_in_page(browser, console, 1440)
    try:
        background = page.eval_on_selector("header", "e => getComputedStyle(e).backgroundColor")
        for name in ("Queue", "Answered", "Stats"):
            colour = page.locator("header nav a", has_text=name).evaluate("e => getComputedStyle(e).color")
            assert contrast(colour, background) >= 4.5, (name, colour, background)
    finally:
        page.context.close()


def test_an_operator_reads_the_whole_error_from_a_repeated_error_and_answers_it(
    browser: Any, console: RunningConsole, raised: Raised
) -> None:
    page = logged_in_page(browser, console, 1440)
    try:
        page.goto(f"{console.url}/escalations/{raised.ids['repeated_error']}")
        page.click("text=The whole error")
        page.wait_for_url(f"{console.url}/failures/F-1")
        marked = page.locator("pre.output mark.salient").first
        assert marked.inner_text() == "E       assert 9 == 10"
        assert page.locator("section.occurrence").count() == 3
        page.go_back()
        page.check("input[name=response_type][value=guidance]")
        page.fill("textarea[name=content]", "Round each line's tax before summing.")
        with page.expect_navigation():
            page.click("form.answer button[type=submit]")
        page.locator("#answer-state", has_text="console:operator").wait_for()
    finally:
        page.context.close()
