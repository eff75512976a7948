"""What one ``record_failure`` reads of the task and of its escalations, counted on the real store.

Every statement the call runs is traced (``read_counting.py``): the task row is read once
per call, and a call that fires reads the open escalation once, the escalation it wrote
once and what holds the task once; each is passed down rather than read again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest

from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.services.failures import record_failure
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.services.tasks import start_task
from mcp_server_escalation.settings import Settings
from read_counting import repeated, traced_reads

SAME_ERROR = FailureReport(
    task_id="t-1", message="AssertionError: expected 3, got 4", file="/p/calc.py", line=7
)


@pytest.fixture
async def rt(db_path: str) -> AsyncIterator[Runtime]:
    async with open_runtime(Settings(db_path=db_path, project_root="/p")) as opened:
        await start_task(opened, title="t", task_id="t-1")
        yield opened


async def traced_record_failure(rt: Runtime, report: FailureReport) -> tuple[Counter[str], bool]:
    """The SELECTs the call ran, by the table they read, and whether it showed an escalation."""
    reads, result = await traced_reads(rt, lambda: record_failure(rt, report))
    return reads, result.escalation is not None


async def test_a_failure_that_fires_reads_the_task_once_and_each_escalation_read_once(rt: Runtime) -> None:
    await record_failure(rt, SAME_ERROR)
    await record_failure(rt, SAME_ERROR)

    reads, shown = await traced_record_failure(rt, SAME_ERROR)  # the third in a row escalates

    assert shown
    assert reads["tasks"] == 1
    # The open escalation (to add to), the one written (to return), what holds the task.
    assert reads["escalations"] == 3
    assert repeated(reads) == []


async def test_a_failure_that_fires_nothing_reads_the_task_once_and_what_holds_it_once(rt: Runtime) -> None:
    reads, shown = await traced_record_failure(rt, SAME_ERROR)

    assert not shown
    assert reads["tasks"] == 1
    assert reads["escalations"] == 1


async def test_a_repeat_that_refreshes_the_open_escalation_reads_each_once_too(rt: Runtime) -> None:
    for _ in range(3):
        await record_failure(rt, SAME_ERROR)

    reads, shown = await traced_record_failure(rt, SAME_ERROR)  # the fourth refreshes the trigger

    assert not shown  # a refresh is no news: the escalation is not shown again
    assert reads["tasks"] == 1
    assert reads["escalations"] == 3
