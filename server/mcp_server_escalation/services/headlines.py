"""Headlines of triggers that count calls or attempts rather than errors.

The first line of a trigger's summary is what the operator and the model read first; for a
trigger that counts (a verification limit, a test stall, no file progress, a budget) the
count alone does not say what went wrong, so it is led by the task's latest error.
"""

from __future__ import annotations

from typing import Any

from ..rules.decide.decisions import Fires
from ..rules.reading.salient import headline
from ..store import failures as failure_store
from ..store import progress as progress_store
from ..store.sql import Conn
from .firing import Evidence, Run
from .runtime import Runtime

# How far back a headline looks for the task's latest error, in actions: an error older than
# this says little about why a count ran out now, and the read stays bounded.
LATEST_ERROR_WITHIN = 50


def lead_with_latest_error(rt: Runtime, conn: Conn, task_id: str, template: str, **fields: object) -> str:
    """The trigger summary ``template`` renders, led by the task's latest error, or alone
    when the task recorded none."""
    summary = rt.prompts.render(template, **fields)
    failure_id = progress_store.latest_failure_id(conn, task_id, LATEST_ERROR_WITHIN)
    latest = failure_store.recent_occurrences(conn, failure_id, 1) if failure_id else []
    if not latest:
        return summary
    return rt.prompts.render("trigger_latest_error", error=headline(latest[0].message), summary=summary)


def counted_evidence(
    rt: Runtime,
    conn: Conn,
    task_id: str,
    fires: Fires,
    read: dict[str, Any] | None = None,
    run: Run | None = None,
) -> Evidence:
    """A counting trigger's evidence: its summary led by the task's latest error, and the
    facts the store holds (``read``) ahead of those its decision already knew."""
    summary = lead_with_latest_error(rt, conn, task_id, fires.summary.template, **fires.summary.values)
    return Evidence(fires.firing, summary, {**(read or {}), **fires.facts}, key=fires.key, run=run)
