"""The console's queue page as data for its template: each row, where the page stands in the
queue, and its links (which carry the filters that are set and the place the next page
starts after)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args
from urllib.parse import urlencode

from ...models.escalations import Escalation, QueuePage
from ...models.limits import EscalationType
from ...rules.operators.announce import HEADLINE_CHARS
from ...rules.reading.salient import headline
from ...services.operator_queue import QueueFilter, awaits_acknowledgement, place_after


@dataclass(frozen=True)
class Row:
    """One escalation of the queue, as its row shows it."""

    escalation: Escalation
    headline: str
    project: str
    answered: bool


@dataclass(frozen=True)
class Place:
    """Where the page stands in the queue, and the links to its first and next pages."""

    first: str
    last: str
    total: int
    shown: bool
    first_page: str | None
    next_page: str | None
    next_count: int


def salient_line(e: Escalation) -> str:
    """The salient line: the first line of the first trigger's summary."""
    return headline(e.triggers[0].summary if e.triggers else e.reason or "", HEADLINE_CHARS)


def queue_rows(escalations: list[Escalation]) -> list[Row]:
    """The queue's rows."""
    return [
        Row(
            escalation=e,
            headline=salient_line(e),
            project=str(e.context.get("task", {}).get("project") or ""),
            answered=awaits_acknowledgement(e) and e.response is not None,
        )
        for e in escalations
    ]


def _queue_link(wanted: QueueFilter, after: str = "") -> str:
    """The queue's address with the filters that are set (and the place to start after)."""
    query = {"project": wanted.project, "agent": wanted.agent, "type": wanted.type, "after": after}
    encoded = urlencode({key: value for key, value in query.items() if value})
    return f"/?{encoded}" if encoded else "/"


def queue_place(found: QueuePage, wanted: QueueFilter) -> Place:
    """Which escalations of the queue this page shows, of how many, and where the others are."""
    shown = found.before + len(found.escalations)
    more = shown < found.total and bool(found.escalations)
    return Place(
        first=f"{found.before + 1:,}",
        last=f"{shown:,}",
        total=found.total,
        shown=bool(found.escalations),
        first_page=_queue_link(wanted) if found.before > 0 else None,
        next_page=_queue_link(wanted, place_after(found.escalations[-1])) if more else None,
        next_count=min(len(found.escalations), found.total - shown),
    )


def kind_choices(wanted: QueueFilter) -> list[str]:
    """The kinds the queue's filter offers (the form sends the store's key, the page shows
    the kind in words), with a kind asked for that the server does not know kept as asked."""
    kinds = list(get_args(EscalationType))
    return kinds if not wanted.type or wanted.type in kinds else [*kinds, wanted.type]
