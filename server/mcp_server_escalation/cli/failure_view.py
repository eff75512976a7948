"""``failures show F-1``: the whole error, as the store keeps it.

An escalation shows each occurrence's message clipped to its head and tail, and the lines
that name the error are often in the middle. This prints the latest occurrences' whole
output, oldest first, with ``>`` before each salient line, and under each occurrence what
changed since the one before it: its place, its attempted action, the lines of output
removed (``-``) and added (``+``). ``--json`` prints the same record for scripts.
"""

from __future__ import annotations

import argparse
import json

from ..models.failures import ShownOccurrence, WholeFailure
from ..rules.wording.words import absent, counted, readable_time
from ..services import guidance
from ..services.runtime import Runtime
from .monitor import out
from .readable import INDENT, labelled, terminal_width, wrap

OUTPUT = INDENT * 2
SALIENT = INDENT + "> "


async def run(rt: Runtime, args: argparse.Namespace) -> int:
    """``failures show ID [--json]``."""
    whole = await guidance.whole_failure(rt, args.id)  # an unknown id: worded in cli/operator.py
    if args.json:
        out(json.dumps(whole.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0
    for line in whole_lines(whole, terminal_width()):
        out(line)
    return 0


def whole_lines(whole: WholeFailure, width: int) -> list[str]:
    """The failure, then each occurrence shown, each line at most ``width`` wide."""
    record = whole.failure
    lines = wrap(f"Failure {record.failure_id}  {record.status}  step {record.step}", width)
    lines += wrap(whole.headline, width)
    lines += ["", *labelled("Task", record.task_id, width, whole_words=True)]
    seen = counted(record.occurrence_count, "time", "times")
    lines += labelled("Seen", f"{seen}, first {readable_time(record.created_at)}", width)
    lines += labelled("", f"last {readable_time(record.last_seen_at)}", width)
    if whole.earlier_omitted:
        lines += labelled("Shown", f"the latest {len(whole.occurrences)}, oldest first", width)
    for occurrence in whole.occurrences:
        lines += ["", *_occurrence_lines(occurrence, record.occurrence_count, width)]
    return lines


def _occurrence_lines(o: ShownOccurrence, count: int, width: int) -> list[str]:
    lines = wrap(f"Occurrence {o.number} of {count}  {readable_time(o.at)}  agent {o.agent_id}", width)
    lines += wrap(f"at {o.place or absent('place')}", width, INDENT, INDENT * 2)
    if o.attempted_action:
        lines += wrap(f"attempted: {o.attempted_action}", width, INDENT, INDENT * 2)
    if o.compared:
        lines += _changes(o, width)
    lines += wrap(f"output, whole ({o.characters:,} characters; > marks the error):", width, INDENT)
    for line in o.output:
        prefix = SALIENT if line.salient else OUTPUT
        lines += wrap(line.text, width, prefix, OUTPUT)
    return lines


def _changes(o: ShownOccurrence, width: int) -> list[str]:
    """What changed since the occurrence before, or that nothing did."""
    moved = o.previous_place != o.place
    retried = o.previous_action != o.attempted_action
    if not (moved or retried or o.output_changes):
        return wrap(f"same place, attempted action and output as occurrence {o.number - 1}", width, INDENT)
    lines = wrap(f"changed since occurrence {o.number - 1}:", width, INDENT)
    deeper = INDENT * 2
    if moved:
        said = f"place: {o.previous_place or absent('place')} -> {o.place or absent('place')}"
        lines += wrap(said, width, deeper, deeper + INDENT)
    if retried:
        before, after = o.previous_action or absent("action"), o.attempted_action or absent("action")
        said = f"attempted: {before} -> {after}"
        lines += wrap(said, width, deeper, deeper + INDENT)
    if o.output_changes:
        lines += wrap("output:", width, deeper)
        for change in o.output_changes:
            lines += wrap(change.text, width, f"{deeper}{change.sign} ", deeper + "  ")
        if o.changes_omitted:
            lines += wrap(f"and {o.changes_omitted} more changed lines", width, deeper)
    else:
        lines += wrap("output: the same", width, deeper)
    return lines
