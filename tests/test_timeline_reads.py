"""A task's timeline read from the store on both backends: pages after a place, in order,
each failure named by its salient line, an unknown task and a place out of range refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import PROJECT, connect
from mcp_server_escalation.errors import InvalidInput, NotFound
from mcp_server_escalation.services import tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings

pytestmark = pytest.mark.both_backends


async def test_the_timeline_pages_after_a_place_and_names_each_failure_by_its_error(
    db_path: str, tmp_path: Path
) -> None:
    async with connect(db_path) as agent:
        await agent.call(
            "start_task", title="Story", task_id="reads", thresholds={"same_error_repeated": 100}
        )
        for n in range(4):
            await agent.call("record_failure", task_id="reads", message=f"ValueError: no rate for {n} 'EUR'")
            await agent.call("check_edit", task_id="reads", paths=[f"src/rate{n}.py"])
    async with open_runtime(Settings(db_path=db_path, project_root=PROJECT)) as rt:
        first = await tasks.timeline(rt, "reads", size=3)
        rest = await tasks.timeline(rt, "reads", after=first.next_after or 0, size=50)
        with pytest.raises(NotFound):
            await tasks.timeline(rt, "no-such-task")
        with pytest.raises(InvalidInput, match="after"):
            await tasks.timeline(rt, "reads", after=-1)
        with pytest.raises(InvalidInput, match="size"):
            await tasks.timeline(rt, "reads", size=51)
    assert (first.total, first.before, len(first.entries)) == (9, 0, 3)
    assert first.next_after is not None
    assert (rest.before, len(rest.entries), rest.next_after) == (3, 6, None)
    entries = first.entries + rest.entries
    assert [e.number for e in entries] == list(range(1, 10))
    assert [e.what for e in entries] == ["task started", *["failure", "edit check"] * 4]
    assert "ValueError: no rate for 0 'EUR'" in entries[1].said
    assert entries[2].files == ["src/rate0.py"]
    assert entries[2].said == "1 path allowed"
