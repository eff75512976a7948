"""A failure's whole output as a person reads it: every line, the salient ones marked, and
what changed from one try to the next (pure, no I/O).

An escalation keeps each occurrence's message clipped to its head and tail
(``evidence.TEXT_SHOWN``): a pytest run keeps its banner and loses the ``E ...`` lines in
the middle. The store keeps every occurrence's message whole; this module lays one out with
the lines ``salient.find`` names marked, and compares each occurrence with the one before it:
its place, its attempted action, and the lines of output removed and added. A stuck agent
tries the same thing with a small change; the change is what the operator wants to see.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ...models.failures import Occurrence, OutputChange, OutputLine, ShownOccurrence
from .salient import LINE_CHARS, find, one_line
from .shell_output import strip_ansi

# Changed lines shown per occurrence; the rest are counted.
CHANGES_SHOWN = 40
# A salient text shorter than this marks only a line equal to it (a short text is in too many).
SALIENT_PART_MIN = 8


def place(occurrence: Occurrence) -> str | None:
    """``file:line`` (or the file alone), or None when the occurrence names no file."""
    if not occurrence.file:
        return None
    return occurrence.file if occurrence.line is None else f"{occurrence.file}:{occurrence.line}"


def output_lines(message: str) -> list[OutputLine]:
    """The message's lines (colour codes removed), each marked when it is a salient one."""
    salient = [text for text in find(message).lines if text]
    return [
        OutputLine(text=line, salient=_names(one_line(line, LINE_CHARS), salient)) for line in _lines(message)
    ]


def _names(line: str, salient: list[str]) -> bool:
    """Is ``line`` one the finder named? A finder may have kept part of it (pytest's ``E``
    lines without their ``E``), so a line that holds a salient text counts."""
    return bool(line) and any(
        text == line or (len(text) >= SALIENT_PART_MIN and text in line) for text in salient
    )


def _lines(message: str) -> list[str]:
    return [line.rstrip() for line in strip_ansi(message).replace("\r\n", "\n").split("\n")]


def output_changes(before: str, after: str) -> tuple[list[OutputChange], int]:
    """The lines removed from ``before`` and added in ``after`` (at most ``CHANGES_SHOWN``),
    and how many more changed lines there are."""
    old, new = _lines(before), _lines(after)
    changes: list[OutputChange] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changes += [OutputChange(sign="-", text=line) for line in old[i1:i2]]
        changes += [OutputChange(sign="+", text=line) for line in new[j1:j2]]
    return changes[:CHANGES_SHOWN], max(0, len(changes) - CHANGES_SHOWN)


def shown_occurrences(
    occurrences: Sequence[Occurrence], first_number: int, before: Occurrence | None = None
) -> list[ShownOccurrence]:
    """Each occurrence (oldest first, numbered from ``first_number``) with its whole output
    marked and what changed since the one before it (``before``: the one before the first,
    when there is one)."""
    shown: list[ShownOccurrence] = []
    previous = before
    for number, occurrence in enumerate(occurrences, first_number):
        changes, more = output_changes(previous.message, occurrence.message) if previous else ([], 0)
        shown.append(
            ShownOccurrence(
                number=number,
                at=occurrence.at,
                agent_id=occurrence.agent_id,
                step=occurrence.step,
                place=place(occurrence),
                attempted_action=occurrence.attempted_action,
                characters=len(occurrence.message),
                output=output_lines(occurrence.message),
                compared=previous is not None,
                previous_place=place(previous) if previous else None,
                previous_action=previous.attempted_action if previous else None,
                output_changes=changes,
                changes_omitted=more,
            )
        )
        previous = occurrence
    return shown
