"""A task's history as a person reads it: each stored action as one timeline entry (pure, no I/O).

The action history (``store/progress.py``) already holds every failure, attempt, progress
report, edit check, escalation and answer of a task, in order, each with the few fields its
call kept. Here each becomes what happened in words ("failure", "edit check"), one line of
its details ("F-3, a test failure at tests/test_cart.py:31; tried: rounded the tax") and the
files it touched. The console's task page and ``tasks timeline`` print the same entries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...models.tasks import Action, TimelineEntry
from ..reading.salient import headline, one_line
from .fact_lines import pairs_line
from .words import counted, kind_words, name_words

# Characters of an agent's note or an operator's name kept on an entry's line.
NOTE_CHARS = 160

Detail = Mapping[str, Any]


def _text(value: object, limit: int = NOTE_CHARS) -> str:
    return one_line(str(value), limit) if value not in (None, "") else ""


def _joined(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _place(detail: Detail) -> str:
    file = _text(detail.get("file"), 400)
    line = detail.get("line")
    return f"{file}:{line}" if file and line is not None else file


def _started(detail: Detail, agent: str) -> str:
    if detail.get("reassigned"):
        return f"taken over by agent {agent}"
    return f"started by agent {agent}" if detail.get("created") else f"resumed by agent {agent}"


def _failure(detail: Detail, errors: Mapping[str, str]) -> str:
    failure_id = _text(detail.get("failure_id"))
    kind = name_words(_text(detail.get("signal_type")))
    place = _place(detail)
    head = f"{failure_id}, {kind}" if kind else failure_id
    where = f"{head} at {place}" if place else head
    tried = _text(detail.get("attempted_action"))
    return _joined(where, f"tried: {tried}" if tried else "", errors.get(failure_id, ""))


def _host_error(detail: Detail) -> str:
    kind = name_words(_text(detail.get("error_type")))
    return f"{_text(detail.get('failure_id'))}, {kind} reported by the host {_text(detail.get('host'))}"


def _attempt(detail: Detail) -> str:
    status = _text(detail.get("status"))
    guard = _text(detail.get("guard"))
    said = f"step {_text(detail.get('step'))}, attempt {_text(detail.get('attempt_number'))}: {status}"
    return _joined(said, f"guard {guard}" if guard else "")


def _progress(detail: Detail) -> str:
    rate = detail.get("pass_rate")
    files = detail.get("files") or []
    note = _text(detail.get("note"))
    return _joined(
        f"step {_text(detail.get('step'))}: {_text(detail.get('outcome')) or 'neutral'}",
        f"pass rate {rate:.0%}" if isinstance(rate, int | float) else "",
        counted(len(files), "file", "files") if files else "no files",
        note,
    )


def _edit(detail: Detail) -> str:
    paths = detail.get("paths") or []
    checked = counted(len(paths), "path", "paths")
    if detail.get("allowed"):
        return f"{checked} allowed"
    refused = detail.get("refused")
    if not isinstance(refused, list):  # recorded before the refused paths were kept
        return f"{checked} checked, refused"
    return f"{checked} refused" if len(refused) == len(paths) else f"{len(refused)} of {checked} refused"


def _fired(detail: Detail) -> str:
    kinds = ", ".join(kind_words(str(kind)) for kind in detail.get("triggers") or [])
    return f"#{_text(detail.get('escalation_id'))} raised by the server: {kinds or 'no trigger named'}"


def _raised(detail: Detail) -> str:
    kind = kind_words(_text(detail.get("kind")) or "ask_human")
    return f"#{_text(detail.get('escalation_id'))} raised by the agent: {kind}"


def _answered(detail: Detail) -> str:
    answer = _text(detail.get("response_type"))
    by = _text(detail.get("responder"))
    return f"#{_text(detail.get('escalation_id'))}: {answer}" + (f" by {by}" if by else "")


def _acknowledged(detail: Detail) -> str:
    note = _text(detail.get("note"))
    said = f"#{_text(detail.get('escalation_id'))}: the agent read the {_text(detail.get('response_type'))}"
    return _joined(said, note)


def _review(detail: Detail) -> str:
    said = (
        f"{_text(detail.get('stage'))}: {_text(detail.get('kind'))} {name_words(_text(detail.get('status')))}"
    )
    cleared = detail.get("cleared")
    return _joined(said, f"{counted(cleared, 'finding', 'findings')} cleared" if cleared else "")


def _ended(detail: Detail) -> str:
    return _joined(name_words(_text(detail.get("outcome"))), _text(detail.get("note")))


# Each kind of action: what it is called, and how its detail reads.
_SAID: dict[str, tuple[str, Callable[[Detail], str]]] = {
    "host_error": ("host error", _host_error),
    "record_attempt": ("attempt", _attempt),
    "report_progress": ("progress report", _progress),
    "check_edit": ("edit check", _edit),
    "escalation_created": ("escalation", _fired),
    "raise_escalation": ("escalation", _raised),
    "escalation_answered": ("answer", _answered),
    "acknowledge_response": ("answer received", _acknowledged),
    "report_review": ("review", _review),
    "end_task": ("task ended", _ended),
}


def _files(kind: str, detail: Detail) -> list[str]:
    """The files the action touched, as it recorded them."""
    if kind == "record_failure":
        return [str(detail["file"])] if detail.get("file") else []
    listed = detail.get("files") if kind == "report_progress" else detail.get("paths")
    return [str(path) for path in listed] if kind in ("report_progress", "check_edit") and listed else []


def _said(kind: str, detail: Detail, agent: str, errors: Mapping[str, str]) -> tuple[str, str]:
    if kind == "start_task":
        return "task started", _started(detail, agent)
    if kind == "record_failure":
        return "failure", _failure(detail, errors)
    if kind in _SAID:
        what, say = _SAID[kind]
        return what, say(detail)
    return kind_words(kind), pairs_line(dict(detail))


def entry(number: int, action_id: int, action: Action, errors: Mapping[str, str]) -> TimelineEntry:
    """The ``number``-th action of a task as its timeline shows it; ``errors``: the salient
    line of each failure the page names, by failure id."""
    detail = action.detail
    what, said = _said(action.kind, detail, action.agent_id, errors)
    failure_id = detail.get("failure_id")
    escalation_id = detail.get("escalation_id")
    return TimelineEntry(
        number=number,
        action_id=action_id,
        at=action.at,
        agent_id=action.agent_id,
        what=what,
        said=said,
        files=_files(action.kind, detail),
        failure_id=str(failure_id) if isinstance(failure_id, str) and failure_id else None,
        escalation_id=escalation_id if isinstance(escalation_id, int) else None,
    )


def recent_entry(summary: Mapping[str, Any]) -> TimelineEntry:
    """One of an escalation's recent actions (``rules/bounds/evidence.action_summary``) as a timeline
    entry; a detail shortened to one line of text is said as that line."""
    detail = summary.get("detail")
    detail = dict(detail) if isinstance(detail, Mapping) else {}
    action = Action(
        at=str(summary.get("at", "")),
        agent_id=str(summary.get("agent_id", "")),
        kind=str(summary.get("kind", "")),
        detail=detail,
    )
    found = entry(0, 0, action, {})
    if set(detail) == {"summary"}:
        return found.model_copy(update={"said": headline(str(detail["summary"]))})
    return found
