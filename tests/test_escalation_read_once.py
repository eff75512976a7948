"""``get_escalation`` reads the escalation it names once and builds what it returns from that
reading: the record it delivers is the one the store holds afterwards, revision and all.

(How often it reads the row is measured by ``benchmarks/measure_reads.py``.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_server_escalation.errors import InvalidInput, NotFound
from mcp_server_escalation.services.escalation_answers import resolve_escalation
from mcp_server_escalation.services.escalation_delivery import get_escalation
from mcp_server_escalation.services.escalation_raising import raise_escalation
from mcp_server_escalation.services.escalations import show_escalation
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.services.tasks import start_task
from mcp_server_escalation.settings import Settings

pytestmark = pytest.mark.both_backends


@pytest.fixture
async def rt(db_path: str) -> AsyncIterator[Runtime]:
    async with open_runtime(Settings(db_path=db_path, project_root="/p")) as opened:
        await start_task(opened, title="t", task_id="t-1")
        raised = await raise_escalation(opened, task_id="t-1", reason="Which database?")
        assert raised.escalation.escalation_id == 1
        yield opened


async def test_the_answer_it_delivers_is_the_record_the_store_holds_after(rt: Runtime) -> None:
    await resolve_escalation(rt, escalation_id=1, response_type="guidance", content="SQLite", role="operator")
    answered = await show_escalation(rt, 1)

    delivered = await get_escalation(rt, escalation_id=1)
    stored = await show_escalation(rt, 1)

    assert delivered.escalation == stored
    assert stored.delivered_at is not None
    assert (delivered.revision, stored.revision) == (answered.revision + 1, answered.revision + 1)
    again = await get_escalation(rt, escalation_id=1, known_revision=stored.revision)
    assert (again.unchanged, again.escalation, again.revision) == (True, None, stored.revision)


async def test_a_poll_that_finds_nothing_new_names_its_task_and_what_to_do(rt: Runtime) -> None:
    pending = await get_escalation(rt, escalation_id=1)
    polled = await get_escalation(rt, escalation_id=1, known_revision=pending.revision)

    assert pending.escalation == await show_escalation(rt, 1)
    assert (polled.unchanged, polled.escalation, polled.directive) == (True, None, "pause")
    assert "t-1" in polled.message


@pytest.mark.parametrize("wait_seconds", [0, 0.5])
async def test_an_unknown_id_or_a_revision_it_never_had_is_refused_by_name(
    rt: Runtime, wait_seconds: float
) -> None:
    with pytest.raises(NotFound, match="escalation_id"):
        await get_escalation(rt, escalation_id=99, wait_seconds=wait_seconds)
    with pytest.raises(InvalidInput, match="known_revision: 7 is above escalation 1's revision 1"):
        await get_escalation(rt, escalation_id=1, known_revision=7, wait_seconds=wait_seconds)
    assert (await show_escalation(rt, 1)).delivered_at is None
