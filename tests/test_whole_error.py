"""The whole error: ``failures show F-1`` and the console's ``/failures/F-1`` show every line of
each occurrence the store keeps, the salient line marked, and what changed from one try to
the next; the escalation (CLI and console) leads there from each occurrence.

A pytest failure's ``E`` lines sit in the middle of its output: the escalation keeps 400
characters of each message, head and tail, and loses them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, logged_in
from operator_support import run_cli

BANNER = "=" * 20 + " test session starts " + "=" * 20
PADDING = "\n".join(f"tests/test_cart.py::test_case_{n} PASSED" for n in range(12))


def pytest_output(expected: int, got: int, marker: str = "") -> str:
    """A failing pytest run whose error lines are far from both ends."""
    return (
        f"{BANNER}\ncollected 13 items\n\n{PADDING}\n"
        "_________________________ test_total _________________________\n\n"
        "    def test_total():\n"
        f">       assert cart.total() == {expected}\n"
        f"E       assert {got} == {expected}\n"
        f"E        +  where {got} = total(){marker}\n\n"
        "tests/test_cart.py:31: AssertionError\n"
        f"{PADDING}\n"
        "=========================== short test summary info ============================\n"
        + "FAILED tests/test_cart.py::test_total - assert ... (see above)\n" * 3
        + "========================= 1 failed, 12 passed in 0.31s =========================="
    )


TRIES = (
    ("rounded the tax", 31, pytest_output(10, 9)),
    ("rounded the tax", 31, pytest_output(10, 9)),
    ("summed in cents", 33, pytest_output(10, 11, " <script>window.pwned = 1</script>")),
)


async def repeat_the_error(db_path: str, task_id: str) -> tuple[int, str]:
    """An agent fails the same test three times (the third try moved and changed it); the
    escalation's id and the failure's."""
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Fix the cart total", task_id=task_id)
        for action, line, output in TRIES:
            result = await agent.call(
                "record_failure",
                task_id=task_id,
                message=output,
                file="tests/test_cart.py",
                line=line,
                attempted_action=action,
            )
    escalation = result["escalation"]
    return int(escalation["escalation_id"]), str(result["failure"]["failure_id"])


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-whole")) as running:
        yield running


async def test_the_escalation_loses_the_error_lines_that_the_whole_error_keeps(tmp_path: Path) -> None:
    db = str(tmp_path / "whole.db")
    escalation_id, failure_id = await repeat_the_error(db, "whole-cli")
    code, shown, _ = await run_cli("--db", db, "escalations", "show", str(escalation_id), home=tmp_path)
    assert code == 0
    assert "+  where 11 = total()" not in shown  # clipped out of the escalation
    assert f"failures show {failure_id}" in " ".join(shown.split())
    code, whole, err = await run_cli("--db", db, "failures", "show", failure_id, home=tmp_path)
    assert code == 0, err
    assert "Occurrence 3 of 3" in whole
    assert "  > E       assert 11 == 10" in whole.splitlines()  # the salient line, marked
    assert "    E        +  where 11 = total() <script>window.pwned = 1</script>" in whole.splitlines()
    assert whole.count(BANNER) == 3  # every occurrence whole
    flat = " ".join(whole.split())
    assert "same place, attempted action and output as occurrence 1" in flat
    assert "place: tests/test_cart.py:31 -> tests/test_cart.py:33" in flat
    assert "attempted: rounded the tax -> summed in cents" in flat
    assert "- E assert 9 == 10 - E + where 9 = total() + E assert 11 == 10" in flat
    assert "{" not in whole
    assert "[" not in whole.replace("[...", "")


async def test_failures_show_refuses_an_unknown_id_in_words(tmp_path: Path) -> None:
    db = str(tmp_path / "whole.db")
    await repeat_the_error(db, "whole-unknown")
    code, out, err = await run_cli("--db", db, "failures", "show", "F-999", home=tmp_path)
    assert code == 1
    assert out == ""
    assert "F-999" in err


async def test_each_occurrence_on_the_console_links_to_the_whole_error(console: RunningConsole) -> None:
    escalation_id, failure_id = await repeat_the_error(console.db_path, "whole-console")
    with logged_in(console) as operator:
        escalation = operator.get(f"/escalations/{escalation_id}").text
        links = re.findall(rf'<a href="(/failures/{failure_id})">', escalation)
        assert len(links) >= 4  # the failure's, and each occurrence's
        whole = operator.get(links[0])
    assert whole.status_code == 200
    page = whole.text
    assert page.count(BANNER) == 3
    marked = '<mark class="salient" title="The line that names the error">E       assert 11 == 10</mark>'
    assert marked in page
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in page
    assert "<script>window" not in page
    assert "Same place, attempted action and output as occurrence 1." in page
    assert "<li>Place: tests/test_cart.py:31 → tests/test_cart.py:33</li>" in page
    assert "<del>- E       assert 9 == 10</del>" in page
    assert "<ins>+ E       assert 11 == 10</ins>" in page


def test_the_whole_error_needs_the_session_and_an_id_that_exists(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url) as anonymous:
        assert anonymous.get("/failures/F-1").status_code == 303
    with logged_in(console) as operator:
        missing = operator.get("/failures/F-999")
        assert missing.status_code == 404
        assert "F-999" in missing.text
        assert operator.get("/failures/%3Cb%3E").status_code == 404
