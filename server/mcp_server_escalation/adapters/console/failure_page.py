"""The whole error (``/failures/F-1``): each occurrence's whole output, the salient lines
marked, and what changed from one occurrence to the next (``rules/whole_error.py``).

Every value is escaped (``pages.fill``); the output goes in a ``<pre>`` line by line, a
salient line inside a ``<mark>``.
"""

from __future__ import annotations

from ...models.failures import ShownOccurrence, WholeFailure
from ...prompts import PromptBook
from .pages import Safe, escape, fill, task_link


def failure_body(book: PromptBook, whole: WholeFailure) -> Safe:
    """The page: the record, then each occurrence shown, oldest first."""
    record = whole.failure
    count = record.occurrence_count
    earlier = (
        fill(book, "console_failure_earlier", shown=len(whole.occurrences), omitted=whole.earlier_omitted)
        if whole.earlier_omitted
        else Safe("")
    )
    return fill(
        book,
        "console_failure",
        failure_id=record.failure_id,
        headline=whole.headline,
        task_link=task_link(record.task_id),
        task_id=record.task_id,
        status=record.status,
        count=count,
        first_seen=record.created_at,
        last_seen=record.last_seen_at,
        earlier=earlier,
        occurrences=Safe("".join(_occurrence(book, o, count) for o in whole.occurrences)),
    )


def _occurrence(book: PromptBook, o: ShownOccurrence, count: int) -> Safe:
    nothing = fill(book, "console_nothing")
    output = "\n".join(
        fill(book, "console_salient_line", line=line.text) if line.salient else escape(line.text)
        for line in o.output
    )
    return fill(
        book,
        "console_occurrence",
        number=o.number,
        count=count,
        at=o.at,
        agent_id=o.agent_id,
        place=o.place or nothing,
        action=o.attempted_action or nothing,
        changes=_changes(book, o) if o.compared else Safe(""),
        characters=f"{o.characters:,}",
        output=Safe(output),
    )


def _changes(book: PromptBook, o: ShownOccurrence) -> Safe:
    """What changed since the occurrence before, or that nothing did."""
    previous = o.number - 1
    moved = o.previous_place != o.place
    retried = o.previous_action != o.attempted_action
    if not (moved or retried or o.output_changes):
        return fill(book, "console_unchanged", previous=previous)
    nothing = fill(book, "console_nothing")
    items = []
    if moved:
        items.append(
            fill(book, "console_change_place", before=o.previous_place or nothing, after=o.place or nothing)
        )
    if retried:
        before, after = o.previous_action or nothing, o.attempted_action or nothing
        items.append(fill(book, "console_change_action", before=before, after=after))
    if o.output_changes:
        lines = "\n".join(
            f"<{'del' if c.sign == '-' else 'ins'}>{escape(c.sign)} {escape(c.text)}"
            f"</{'del' if c.sign == '-' else 'ins'}>"
            for c in o.output_changes
        )
        more = fill(book, "console_changes_more", count=o.changes_omitted) if o.changes_omitted else Safe("")
        items.append(fill(book, "console_change_output", lines=Safe(lines), more=more))
    else:
        items.append(fill(book, "console_change_output_same"))
    return fill(book, "console_changes", previous=previous, items=Safe("".join(items)))
