"""What the operator console shows: the queue of escalations waiting for a human.

The queue is the pending escalations and the answered ones whose answer the agent has not
acknowledged yet (an answer nobody has read is still the operator's business), pending ones
first, newest first in each part. It is read a page at a time, after a place in it (the
last escalation of the page before): a page costs the same however long the queue or the
store's history, and an escalation raised meanwhile never shifts a page onto rows already
shown. The filters are the operator's query string, applied by the store to the whole queue.
A person's token with a scope sees only its scope's escalations, as on ``/mcp``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidInput
from ..models.escalations import Escalation, QueuePage, QueuePlace, ToldAtFiring
from ..models.limits import SQLITE_INTEGER_MAX
from ..rules.bounds.token_scope import Scope
from ..store import escalations as escalation_store
from ..store import operator_queue as queue_store
from ..store.sql import Conn
from .escalations import load_escalation
from .runtime import Runtime

# Escalations on one page of the queue (and the most a page may ask for).
QUEUE_PAGE = 200
# A place in the queue as the page's link writes it: ``p`` (pending) or ``a`` (answered, not
# yet acknowledged), then the id of the last escalation shown.
_PLACE = re.compile(r"([pa])([0-9]{1,19})")


@dataclass(frozen=True)
class QueueFilter:
    """The query string's filters (exact values); an empty value matches every row."""

    project: str = ""
    agent: str = ""
    type: str = ""


def awaits_acknowledgement(escalation: Escalation) -> bool:
    """Answered by a human, not yet acknowledged by the agent."""
    response = escalation.response
    return (
        response is not None
        and response.response_type != "withdraw"
        and escalation.acknowledged_at is None
        and escalation.status != "pending"
    )


def place_after(escalation: Escalation) -> str:
    """The place in the queue just after ``escalation``, as a link writes it."""
    return f"{'a' if awaits_acknowledgement(escalation) else 'p'}{escalation.escalation_id}"


def read_place(text: str) -> QueuePlace | None:
    """The place a link names (None for the first page), or InvalidInput naming ``after``."""
    if not text:
        return None
    found = _PLACE.fullmatch(text)
    if found is None or not 0 < int(found.group(2)) <= SQLITE_INTEGER_MAX:
        problem = f"{text[:40]!r} is not a place in the queue"
        raise InvalidInput("after", f"{problem}: 'p' or 'a' then an escalation id of 1 to 19 digits")
    return QueuePlace(answered=found.group(1) == "a", escalation_id=int(found.group(2)))


async def queue(
    rt: Runtime,
    wanted: QueueFilter,
    after: QueuePlace | None = None,
    size: int = QUEUE_PAGE,
    *,
    within: Scope | None = None,
) -> QueuePage:
    """The page of the queue after ``after`` (the first page without it): at most ``size``
    escalations, with how many the filtered queue holds and how many come before the page;
    ``within``: only those of the tasks a scoped token may see (None: every task's)."""
    if not 1 <= size <= QUEUE_PAGE:
        raise InvalidInput("size", f"{size} escalations per page; give 1 to {QUEUE_PAGE}")
    if within is not None:
        return await rt.db.read(lambda conn: _scoped_page(conn, wanted, after, size, within))
    return await rt.db.read(
        lambda conn: queue_store.waiting_for_operator(
            conn, project=wanted.project, agent_id=wanted.agent, type_=wanted.type, after=after, limit=size
        )
    )


def _order(place: QueuePlace) -> tuple[bool, int]:
    """Where a place stands in the queue: pending first, then answered; newest first in each."""
    return place.answered, -place.escalation_id


def _scoped_page(
    conn: Conn, wanted: QueueFilter, after: QueuePlace | None, size: int, within: Scope
) -> QueuePage:
    """The page of a scoped token's queue: the whole filtered queue's places are read and the
    scope keeps its own (``Scope.admits``, the check of every scoped list), then paged as the
    store pages the whole queue."""
    listed = queue_store.waiting_with_tasks(
        conn, project=wanted.project, agent_id=wanted.agent, type_=wanted.type
    )
    kept = [place for place, task, project in listed if within.admits(task, project)]
    before = sum(1 for place in kept if after is not None and _order(place) <= _order(after))
    page = [load_escalation(conn, place.escalation_id) for place in kept[before : before + size]]
    return QueuePage(escalations=page, total=len(kept), before=before)


async def told_when_fired(rt: Runtime, escalation_id: int) -> ToldAtFiring | None:
    """What the escalation's agent was told when it fired, or None when it was raised before
    that was kept."""
    return await rt.db.read(lambda conn: escalation_store.told_agent(conn, escalation_id))
