"""``escalations list`` and ``escalations show`` as an operator reads them (pure, no I/O).

The headline of an escalation is its salient error (the first line of its first trigger's
summary, ``rules/reading/salient.py``), printed under the row that names it. Ids are printed whole,
never cut to a column: an operator copies them into ``respond`` and ``tasks show``. The
answer hint offers only what the escalation accepts from a human (``withdraw`` is the
agent's own move; ``--approve`` only where a change can be approved); its words come from
``prompts/operator.toml``.
"""

from __future__ import annotations

import shlex

from ..models.escalations import Escalation, EscalationSummary, ReviewedEscalation
from ..prompts import PromptBook
from ..rules.operators.announce import answer_flags
from ..rules.reading.salient import headline
from ..rules.triggers.records import RAISED_BY_AGENT
from ..rules.wording import timeline
from ..rules.wording.words import absent, ago, criteria_words, kind_words, name_words, trigger_words
from .evidence_view import evidence_lines, when
from .readable import INDENT, cut, labelled, pairs_line, wrap

RECENT_ACTIONS_SHOWN = 10


def summary_lines(s: EscalationSummary, width: int) -> list[str]:
    """One escalation of ``escalations list``: a row, the task id whole, the headline."""
    # Every trigger, the escalation's own type first: one escalation can hold several.
    types = " + ".join(kind_words(kind) for kind in [s.type, *(t for t in s.trigger_types if t != s.type)])
    status = name_words(s.status)
    row = f"#{s.escalation_id}  {types}  {s.priority}  {status}{'  blocking' if s.blocking else ''}"
    task = f"task {s.task_id}"
    lines = [f"{row}  {task}"] if len(row) + 2 + len(task) <= width else [row, f"{INDENT}{task}"]
    return [*lines, f"{INDENT}{cut(s.headline, width - len(INDENT))}"]


def reviewed_lines(row: ReviewedEscalation, width: int, now: str) -> list[str]:
    """One escalation of ``escalations list``: its summary, then who raised it, for which
    project and how long ago, and once answered the answer, who gave it, when, and the
    operator's verdict, so a list of answers is reviewed without opening each."""
    s = row.summary
    lines = summary_lines(s, width)
    said = f"agent {s.agent_id}, project {row.project or absent('project')}, raised {ago(s.created_at, now)}"
    lines[-1:-1] = wrap(said, width, INDENT, INDENT * 2)
    r = row.response
    if r is not None:
        answer = f"answer {r.response_type} by {r.responder or absent()}, {ago(r.responded_at, now)}"
        verdict = (
            f"verdict {name_words(row.verdict)}, by {row.judged_by}" if row.verdict else absent("verdict")
        )
        lines += wrap(f"{answer}; {verdict}", width, INDENT, INDENT * 2)
        lines += [f"{INDENT}{cut(r.content, width - len(INDENT))}"] if r.content else []
    return lines


def escalation_lines(
    e: Escalation,
    prompts: PromptBook,
    width: int,
    db_path: str | None = None,
    verdict: tuple[str, str, str] | None = None,
) -> list[str]:
    """The escalation in full, each line at most ``width`` wide (but for an unbreakable word).

    ``db_path``: the store, when it is not the default one, so the printed respond command
    answers this escalation and not one with the same id in another store. ``verdict``: the
    operator's (verdict, by whom, when), shown under the answer.
    """
    task = e.context.get("task", {})
    first = e.triggers[0].summary if e.triggers else e.reason or ""
    lines = wrap(
        f"Escalation {e.escalation_id}  {kind_words(e.type)}  {name_words(e.status)}  priority {e.priority}"
        f"{'  blocking' if e.blocking else ''}",
        width,
    )
    lines += wrap(headline(first), width) if first else []
    lines += ["", *labelled("Task", e.task_id, width, whole_words=True)]
    lines += labelled("", str(task.get("title", "")), width) if task.get("title") else []
    lines += labelled("Agent", e.agent_id, width)
    if task.get("specification"):
        lines += labelled("Spec", str(task["specification"]), width)
    lines += labelled("Scope", ", ".join(task.get("scope") or []) or absent("scope"), width)
    lines += labelled("Created", f"{when(e.created_at)}, updated {when(e.updated_at)}", width)
    if e.question or e.reason:
        label = "Error" if e.type == "system_error" else "Question"
        lines += labelled(label, e.question or e.reason or "", width)
        if e.question and e.reason and e.reason != e.question:
            lines += labelled("Why", e.reason, width)
        for i, option in enumerate(e.options, 1):
            lines += wrap(option, width, f"{INDENT}option {i}: ")
    lines += ["", "Triggers"]
    for t in e.triggers:
        # The headline above is the first trigger's summary: said once, not again here.
        said = headline(t.summary)
        text = kind_words(t.type) if said == headline(first) else f"{kind_words(t.type)}: {said}"
        lines += wrap(text, width, f"{INDENT}- ", INDENT * 2)
        fired = f"; fired {t.fired_count} times" if t.fired_count > 1 else ""
        if t.type in RAISED_BY_AGENT:
            lines += wrap(f"raised by the agent {when(t.at)}", width, INDENT * 2)
            continue
        measured = {key: value for key, value in t.observed.items() if key != "fingerprint"}
        lines += wrap(f"threshold {criteria_words(t.criteria, pairs_line)}", width, INDENT * 2)
        lines += wrap(f"measured {pairs_line(measured)}; fired {when(t.at)}{fired}", width, INDENT * 2)
    lines += _evidence(e, width, db_path) + _actions(e, width) + _answer(e, prompts, width, db_path)
    if e.status != "pending":
        judged = (
            f"{name_words(verdict[0])}, by {verdict[1]}, {when(verdict[2])}" if verdict else absent("verdict")
        )
        lines += labelled("Verdict", judged, width)
    return lines


def _evidence(e: Escalation, width: int, db_path: str | None) -> list[str]:
    evidence = e.context.get("evidence", {})
    lines: list[str] = []
    errors = {t.key: headline(t.summary) for t in e.triggers}
    kinds = {t.key: t.type for t in e.triggers}
    store = f" --db {shlex.quote(db_path)}" if db_path else ""
    for name, facts in sorted(evidence.items()):
        if kinds.get(name) in RAISED_BY_AGENT:
            continue  # the question, or the error, is printed above
        lines += wrap(trigger_words(name), width, INDENT)
        if isinstance(facts, dict):
            kind = kinds.get(name, name.partition(":")[0])
            lines += evidence_lines(kind, facts, width, INDENT * 2, errors.get(name, ""))
            if isinstance(facts.get("failure_id"), str):
                command = f"mcp-server-escalation{store} failures show {facts['failure_id']}"
                lines += wrap(f"the whole error of each occurrence: {command}", width, INDENT * 2, INDENT * 3)
    return ["", "Evidence", *lines] if lines else []


def _actions(e: Escalation, width: int) -> list[str]:
    actions = e.context.get("recent_actions", [])[-RECENT_ACTIONS_SHOWN:]
    lines = ["", "Recent actions"] if actions else []
    for a in actions:
        entry = timeline.recent_entry(a)
        lines += wrap(f"{when(entry.at)}  {entry.what}  {entry.said}", width, INDENT, INDENT * 2)
    return lines


def _answer(e: Escalation, prompts: PromptBook, width: int, db_path: str | None) -> list[str]:
    if e.response:
        r = e.response
        lines = [
            "",
            *labelled("Answer", f"{r.response_type} by {r.responder}, {when(r.responded_at)}", width),
        ]
        lines += labelled("", r.content, width) if r.content else []
        granted = [f"file limit {r.new_file_limit}"] if r.new_file_limit else []
        granted += [f"scope added {', '.join(r.add_scope)}"] if r.add_scope else []
        lines += labelled("", "; ".join(granted), width) if granted else []
        delivered = when(e.delivered_at) if e.delivered_at else absent("time")
        acknowledged = when(e.acknowledged_at) if e.acknowledged_at else absent("time")
        lines += labelled("Received", f"{delivered}; acknowledged {acknowledged}", width)
        return lines
    flags = answer_flags(e)
    if e.status != "pending" or not flags:
        return []
    store = f" --db {shlex.quote(db_path)}" if db_path else ""
    command = f"mcp-server-escalation{store} escalations respond {e.escalation_id}"
    text = prompts.render("cli_answer_with", command=command, flags=" | ".join(flags))
    return ["", *wrap(text, width)]
