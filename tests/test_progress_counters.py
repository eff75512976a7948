"""What a ``report_progress`` or a ``check_edit`` that fires keeps in step, on the real store.

The call keeps the task row in step with its own writes (the counters, the best pass rate,
the files it adds) and hands that to the firing, which hands back the task as it leaves it:
the result, the escalation's context and the stored row show the same counters. (How often
the call reads the row is measured by ``benchmarks/measure_reads.py``.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.services.progress import check_edit, report_progress
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.services.tasks import start_task
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import tasks as task_store


@pytest.fixture
async def rt(db_path: str) -> AsyncIterator[Runtime]:
    async with open_runtime(Settings(db_path=db_path, project_root="/p")) as opened:
        await start_task(
            opened,
            title="t",
            task_id="t-1",
            scope=["src/**"],
            thresholds=ThresholdOverrides(no_file_changes_after_attempts=2, files_modified_exceeds=2),
        )
        yield opened


async def stored_task_counters(rt: Runtime) -> dict[str, object]:
    task = await rt.db.read(lambda conn: task_store.get(conn, "t-1"))
    assert task is not None
    return task.counters.model_dump()


async def test_a_progress_report_that_fires_returns_and_escalates_with_the_counters_it_stored(
    rt: Runtime,
) -> None:
    await report_progress(rt, task_id="t-1", tests_passed=1, tests_failed=1)

    # The second attempt without a changed file escalates.
    result = await report_progress(rt, task_id="t-1", tests_passed=1, tests_failed=1)

    assert result.escalation is not None
    assert result.escalation.triggers[0].type == "no_file_progress"
    stored = await stored_task_counters(rt)
    assert result.counters.model_dump() == stored
    assert result.escalation.context["counters"] == stored


async def test_an_edit_check_that_fires_escalates_with_the_counters_it_stored(rt: Runtime) -> None:
    await check_edit(rt, task_id="t-1", paths=["/p/src/a.py", "/p/src/b.py"])

    result = await check_edit(rt, task_id="t-1", paths=["/p/src/c.py"])  # past the limit of two

    assert not result.allowed
    assert result.escalation is not None
    assert result.escalation.triggers[0].type == "file_limit"
    stored = await stored_task_counters(rt)
    assert stored["files_modified"] == 2
    assert result.escalation.context["counters"] == stored


async def test_an_allowed_edit_check_counts_its_files(rt: Runtime) -> None:
    result = await check_edit(rt, task_id="t-1", paths=["/p/src/a.py"])

    assert result.allowed
    assert (await stored_task_counters(rt))["files_modified"] == 1
