"""The task tools: start, end and look at a task."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ....models.limits import GlobList, Name, PathText, ShortText, TaskId
from ....models.results import EndTaskResult, StartTaskResult, TaskView
from ....models.thresholds import ThresholdOverrides
from ....services import tasks
from .call import READ, WRITE, Served, ToolCall


async def start_task(
    call: ToolCall,
    title: Annotated[str, Field(min_length=1, max_length=1024)],
    specification: ShortText = "",
    scope: GlobList = [],  # noqa: B006 (pydantic copies defaults)
    task_id: TaskId | None = None,
    agent_id: Name = "agent",
    project: PathText | None = None,
    baseline_pass_rate: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
    thresholds: ThresholdOverrides | None = None,
) -> StartTaskResult:
    """Start (or resume, or take over) a task; call once before any other tool."""
    started = await tasks.start_task(
        call.runtime,
        title=title,
        specification=specification,
        scope=scope,
        task_id=task_id,
        agent_id=agent_id,
        project=project,
        baseline_pass_rate=baseline_pass_rate,
        thresholds=thresholds,
    )
    call.holders.hold(call.connection(), started.task_id, started.task.generation)
    return started


async def end_task(
    call: ToolCall,
    task_id: TaskId,
    outcome: Literal["completed", "abandoned"],
    note: ShortText | None = None,
) -> EndTaskResult:
    """End a task; 'completed' needs a passing latest test run and no open escalation."""
    return await tasks.end_task(call.runtime, task_id=task_id, outcome=outcome, note=note)


async def get_task(call: ToolCall, task_id: TaskId) -> TaskView:
    """A task's status, counters, thresholds, files, test history and open escalation."""
    return await tasks.get_task(call.runtime, task_id)


TOOLS = (Served(start_task, WRITE), Served(end_task, WRITE), Served(get_task, READ))
