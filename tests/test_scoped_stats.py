"""The stats of a token's scope, on both backends: every figure ``stats`` reads (escalations'
times, verdicts, notifier deliveries) comes with its task and project from the store and is
kept by ``Scope.admits``, so a scoped report counts its tasks only, a notifier's latest error
included, and a report without a scope counts every task as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_escalation.rules.bounds.token_scope import Scope
from mcp_server_escalation.services import escalation_answers, escalation_raising, reports, tasks
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import outbox as outbox_store
from mcp_server_escalation.store.sql import Conn

pytestmark = pytest.mark.both_backends

SCOPE = Scope(projects=("/srv/ci/shop",), task_prefixes=("ci-shop-",))
NOTIFIER = "command:0123456789ab"
# (task, project, verdict or None for a question left waiting, what its delivery did)
ESCALATIONS = (
    ("ci-shop-1", "/srv/ci/shop/backend", "useful", "failed then delivered"),
    ("ci-shop-2", "/srv/ci/shop", None, "failed"),
    ("victim", "/srv/other", "false_alarm", "delivered"),
    ("neighbour", "/srv/ci/shop/backend", "useful", "failed"),  # outside by its id
    ("ci-shop-9", "/srv/other", None, "failed"),  # outside by its folder
)


def _deliver(conn: Conn, task: str, outcome: str, hour: int) -> None:
    """One attempt per failure, at ``hour`` o'clock (a later one's error is the newer)."""
    (due,) = [
        d for d in outbox_store.current(conn, NOTIFIER) if d.escalation_id == _escalation_of(conn, task)
    ]
    now = f"2026-11-28T{hour:02d}:00:00.000000Z"
    outbox_store.claim(conn, due, NOTIFIER, now=now, lease_until=now)
    if outcome == "delivered":
        outbox_store.mark_delivered(conn, due.outbox_id, NOTIFIER, now)
        return
    outbox_store.mark_failed(
        conn, due.outbox_id, NOTIFIER, error=f"no route to {task}", next_attempt_at=now, now=now
    )
    if outcome == "failed then delivered":
        again = due.model_copy(update={"attempts": 1})
        outbox_store.claim(conn, again, NOTIFIER, now=now, lease_until=now)
        outbox_store.mark_delivered(conn, due.outbox_id, NOTIFIER, now)


def _escalation_of(conn: Conn, task: str) -> int:
    return int(conn.execute("SELECT escalation_id FROM escalations WHERE task_id = ?", (task,)).fetchone()[0])


async def _store(rt: Runtime) -> None:
    for hour, (task, project, _verdict, outcome) in enumerate(ESCALATIONS, start=8):
        await tasks.start_task(rt, title=task, task_id=task, project=project)
        await escalation_raising.raise_escalation(rt, task_id=task, reason=f"Which database for {task}?")
        await rt.db.write(
            lambda conn, task=task, outcome=outcome, hour=hour: _deliver(conn, task, outcome, hour)
        )
    for task, _project, verdict, _outcome in ESCALATIONS:
        if verdict is not None:
            escalation_id = await rt.db.read(lambda conn, task=task: _escalation_of(conn, task))
            await escalation_answers.resolve_escalation(
                rt,
                escalation_id=escalation_id,
                response_type="guidance",
                content="SQLite",
                role="operator",
                verdict=verdict,
            )


async def test_a_scoped_report_counts_its_tasks_only_and_an_unscoped_one_every_task(
    db_path: str, tmp_path: Path
) -> None:
    async with open_runtime(Settings(db_path=db_path, project_root=str(tmp_path))) as rt:
        await _store(rt)
        mine = await reports.stats(rt, within=SCOPE)
        my_buckets = await reports.answer_time_buckets(rt, within=SCOPE)
        everyone = await reports.stats(rt)
        buckets = await reports.answer_time_buckets(rt)

    assert (mine.total, mine.by_status, mine.resolution.answered) == (2, {"pending": 1, "resolved": 1}, 1)
    assert sum(day.total for day in mine.per_day) == 2
    assert sum(my_buckets) == 1
    assert [(v.project, v.useful, v.false_alarm) for v in mine.verdicts] == [("/srv/ci/shop/backend", 1, 0)]
    assert mine.raise_thresholds == []
    assert [(j.type, j.useful, j.false_alarm) for j in mine.judged_by_type if j.useful + j.false_alarm] == [
        ("ask_human", 1, 0)
    ]
    # the newest error of the scope's deliveries, not the later ones of other tasks
    assert [(n.delivered, n.waiting, n.failed_attempts, n.last_error) for n in mine.notifications] == [
        (1, 1, 2, "no route to ci-shop-2")
    ]

    assert (everyone.total, everyone.by_status, everyone.resolution.answered) == (
        5,
        {"pending": 2, "resolved": 3},
        3,
    )
    assert sum(buckets) == 3
    assert [(v.project, v.useful, v.false_alarm) for v in everyone.verdicts] == [
        ("/srv/ci/shop/backend", 2, 0),
        ("/srv/other", 0, 1),
    ]
    assert [
        (n.notifier, n.delivered, n.waiting, n.failed_attempts, n.last_error) for n in everyone.notifications
    ] == [(NOTIFIER, 2, 3, 4, "no route to ci-shop-9")]
