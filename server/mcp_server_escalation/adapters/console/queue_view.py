"""The console's queue page: its rows, where the page stands in the queue, and its links.

Built like every page (pages.py): templates from ``prompts/console.toml`` filled with escaped
values. The links carry the filters that are set and the place the next page starts after.
"""

from __future__ import annotations

from urllib.parse import urlencode

from ...models.escalations import Escalation, QueuePage
from ...prompts import PromptBook
from ...rules.words import kind_words
from ...services.console import QueueFilter, awaits_acknowledgement, place_after
from .pages import Safe, age, fill, salient_line, task_link


def _project(escalation: Escalation) -> str:
    return str(escalation.context.get("task", {}).get("project") or "")


def queue_rows(book: PromptBook, escalations: list[Escalation], now: str) -> Safe:
    """The queue's table rows, or the one row that says nothing is waiting."""
    if not escalations:
        return fill(book, "console_queue_empty")
    rows = []
    for e in escalations:
        answered = awaits_acknowledgement(e)
        state = (
            fill(book, "console_state_answered", response_type=e.response.response_type)
            if answered and e.response
            else fill(book, "console_state_pending")
        )
        rows.append(
            fill(
                book,
                "console_queue_row",
                state_class="answered" if answered else "pending",
                escalation_id=e.escalation_id,
                priority=e.priority,
                age=age(e.created_at, now),
                type=kind_words(e.type),
                triggers=", ".join(kind_words(t.type) for t in e.triggers),
                headline=salient_line(e),
                task_link=task_link(e.task_id),
                task_id=e.task_id,
                project=_project(e),
                agent_id=e.agent_id,
                state=state,
            )
        )
    return Safe("".join(rows))


def queue_count(book: PromptBook, found: QueuePage) -> Safe:
    """Which escalations of the queue this page shows, and how many it holds in all."""
    if not found.escalations and found.total == 0:
        return fill(book, "console_queue_count_empty")
    if not found.escalations:
        return fill(book, "console_queue_count_past_end", total=f"{found.total:,}")
    first = found.before + 1
    return fill(
        book,
        "console_queue_count",
        first=f"{first:,}",
        last=f"{found.before + len(found.escalations):,}",
        total=f"{found.total:,}",
    )


def _queue_link(wanted: QueueFilter, after: str = "") -> str:
    """The queue's address with the filters that are set (and the place to start after)."""
    query = {"project": wanted.project, "agent": wanted.agent, "type": wanted.type, "after": after}
    encoded = urlencode({key: value for key, value in query.items() if value})
    return f"/?{encoded}" if encoded else "/"


def queue_pages(book: PromptBook, found: QueuePage, wanted: QueueFilter) -> Safe:
    """Links to the queue's first page (from a later one) and to the next (when there is one)."""
    links: list[Safe] = []
    if found.before > 0:
        links.append(fill(book, "console_queue_first_page", href=_queue_link(wanted)))
    shown = found.before + len(found.escalations)
    if found.escalations and shown < found.total:
        after = place_after(found.escalations[-1])
        more = min(len(found.escalations), found.total - shown)
        links.append(fill(book, "console_queue_next_page", href=_queue_link(wanted, after), count=more))
    return fill(book, "console_queue_pages", links=Safe(" ".join(links))) if links else Safe("")
