"""What operators' verdicts say about the triggers (pure, no I/O).

An operator who answers an escalation may say whether it was useful or a false alarm. Counted
per escalation type and project, they measure each trigger's precision on the team's own
runs; where false alarms outnumber useful escalations, the trigger fires too early there, and
the threshold to raise is named.
"""

from __future__ import annotations

from ...models.reports import ReplayFigure, ThresholdAdvice, TypeJudgement, VerdictCount
from ..triggers.records import RECORDS

VERDICTS = ("useful", "false_alarm")
# The threshold that decides when each type fires (docs/triggers.md); a type the agent
# raises itself has none.
THRESHOLD_OF = {r.type: r.raise_on_false_alarm for r in RECORDS if r.raise_on_false_alarm is not None}


def per_project(counts: list[VerdictCount]) -> list[VerdictCount]:
    """The verdicts ``counts`` hold (per type and task, by type then project) summed per type
    and project, in that order."""
    summed: dict[tuple[str, str], VerdictCount] = {}
    for count in counts:
        key = (count.type, count.project)
        seen = summed.get(key)
        summed[key] = (
            count
            if seen is None
            else count.model_copy(
                update={
                    "useful": seen.useful + count.useful,
                    "false_alarm": seen.false_alarm + count.false_alarm,
                }
            )
        )
    return list(summed.values())


def advice(counts: list[VerdictCount]) -> list[ThresholdAdvice]:
    """The thresholds to raise: where an escalation type's false alarms outnumber its useful
    escalations in a project (types the agent raises itself have no threshold)."""
    return [
        ThresholdAdvice(
            type=count.type,
            project=count.project,
            threshold=THRESHOLD_OF[count.type],
            useful=count.useful,
            false_alarm=count.false_alarm,
        )
        for count in counts
        if count.false_alarm > count.useful and count.type in THRESHOLD_OF
    ]


def beside_replay(counts: list[VerdictCount], figures: list[ReplayFigure]) -> list[TypeJudgement]:
    """Per trigger type (every project together): the operators' verdicts, and the replay's
    precision for it on each corpus; a type with neither is left out. The replay measures the
    triggers on other teams' runs, the verdicts on this team's: side by side, a type whose
    verdicts fall well under its replayed precision fires too early here."""
    useful: dict[str, int] = {}
    false_alarm: dict[str, int] = {}
    for count in counts:
        useful[count.type] = useful.get(count.type, 0) + count.useful
        false_alarm[count.type] = false_alarm.get(count.type, 0) + count.false_alarm
    types = sorted({*useful, *(f.type for f in figures if f.type != "any")})
    judged = []
    for type_ in types:
        yes, no = useful.get(type_, 0), false_alarm.get(type_, 0)
        judged.append(
            TypeJudgement(
                type=type_,
                useful=yes,
                false_alarm=no,
                useful_share=round(yes / (yes + no), 4) if yes + no else None,
                replay=sorted((f for f in figures if f.type == type_), key=lambda f: f.corpus),
            )
        )
    return judged
