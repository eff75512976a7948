"""Each kind of trigger's evidence as ``escalations show`` prints it (pure, no I/O): the view
its record names (``rules/triggers/records.py``), the same as the console's
(``adapters/console/templates/evidence.html``).

- repeated error: the error once, then each occurrence's time, place and attempted action,
  and the command for the whole error;
- no file progress: each attempt's time, note, files and outcome;
- test stall, verification limit: the pass rate the task started at, the pass rates oldest
  first, and each run's counts;
- file limit: the files modified and proposed against the limit;
- scope deviation: the paths outside the scope against the scope;
- external blocker: what blocks it, its details, place, attempted action and message;
- budget: what was used of it, since when;
- a question or error the agent raised: nothing here (the question and its options come
  first on the page).

Any other kind (stagnation: its record names the generic view), or evidence stored by an
older version, falls back to labelled lines (``rules/wording/fact_lines.py``). Times are
written as a person writes them, in UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..rules.bounds.evidence import is_clipped
from ..rules.reading.salient import headline, one_line
from ..rules.triggers.records import view_of
from ..rules.wording.fact_lines import INDENT, facts_lines, wrap
from ..rules.wording.words import NOTHING, absent, counted, field_words, name_words, readable_time
from .monitor import table

Facts = dict[str, Any]


def when(at: object) -> str:
    """A stored timestamp as a person reads it; anything else as it is."""
    try:
        return readable_time(str(at))
    except ValueError:
        return str(at or NOTHING)


def place(item: Facts) -> str:
    """``file:line`` of an occurrence (the file alone without a line)."""
    file = item.get("file")
    if not file:
        return absent("place")
    return f"{file}:{item['line']}" if item.get("line") is not None else str(file)


def _text(value: object) -> str:
    return one_line(str(value), 4000) if value not in (None, "") else NOTHING


def _rate(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) and not isinstance(value, bool) else NOTHING


def _run_title(name: str, run: Facts) -> str:
    shown = len(run.get("at_firing") or [])
    latest = len(run.get("latest") or [])
    since = f" and the latest {latest} since" if latest else ""
    more = f"; {run['omitted']} more are in the store" if run.get("omitted") else ""
    return f"{name} ({run.get('count', 0)} in all; shown: the {shown} that fired it{since}{more}):"


def _items(run: Facts) -> list[Facts]:
    return [*(run.get("at_firing") or []), *(run.get("latest") or [])]


def the_error(items: list[Facts], error: str) -> str:
    """The error once: the salient line of the first occurrence that kept its message (a
    repeat keeps none); the trigger's headline when that message lost its middle, where a
    runner prints the error, or when none kept one."""
    message = next((str(item["message"]) for item in items if item.get("message")), "")
    return headline(message) if message and not is_clipped(message) else error


def _occurrences(facts: Facts, width: int, prefix: str, error: str) -> list[str]:
    run = facts["occurrences"]
    said = the_error(_items(run), error)
    # The trigger's summary, printed above, names the error first: it is said once.
    lines = (
        []
        if not said or error.startswith(said)
        else wrap(f"the error: {said}", width, prefix, prefix + INDENT)
    )
    seen = f"seen {counted(int(facts.get('occurrence_count', run.get('count', 0))), 'time', 'times')}"
    lines += wrap(
        f"{seen}: first {when(facts.get('first_seen_at'))}, last {when(facts.get('last_seen_at'))}",
        width,
        prefix,
    )
    lines += wrap(_run_title("occurrences", run), width, prefix)
    for item in _items(run):
        said = f"{when(item.get('at'))}  {place(item)}  {_text(item.get('attempted_action'))}"
        lines += wrap(said, width, prefix + INDENT, prefix + INDENT * 3)
    return lines


def _attempts(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    run = facts["attempts"]
    lines = wrap(_run_title("attempts", run), width, prefix)
    for item in _items(run):
        paths = ", ".join(str(path) for path in item.get("files") or [])
        files = f"files: {paths}" if paths else absent("files")
        note = _text(item.get("note")) if item.get("note") else absent("note")
        said = (
            f"{when(item.get('at'))}  {note}; {files}; "
            f"outcome {name_words(str(item.get('outcome') or 'neutral'))}"
        )
        lines += wrap(said, width, prefix + INDENT, prefix + INDENT * 3)
    return lines


def _test_runs(runs: list[Facts], width: int, prefix: str, baseline: object = None) -> list[str]:
    lines = wrap(f"pass rate when the task started: {_rate(baseline)}", width, prefix) if baseline else []
    rates = " -> ".join(_rate(run.get("pass_rate")) for run in runs)
    lines += wrap(
        f"pass rates over {counted(len(runs), 'run', 'runs')}, oldest first: {rates}",
        width,
        prefix,
        prefix + INDENT,
    )
    rows = [
        [
            when(run.get("at")),
            str(run.get("passed", 0)),
            str(run.get("failed", 0)),
            _rate(run.get("pass_rate")),
            "yes" if run.get("improved") else "no",
        ]
        for run in runs
    ]
    headers = ["WHEN", "PASSED", "FAILED", "RATE", "BETTER THAN BEFORE"]
    lines += [
        prefix + line for line in table(headers, rows, right=frozenset({1, 2, 3}), width=width - len(prefix))
    ]
    return lines


def _stall(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    return _test_runs(facts["history"], width, prefix, facts.get("baseline_pass_rate"))


def _verification(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    return _test_runs(facts["verification_history"], width, prefix)


def _paths(title: str, paths: list[Any], width: int, prefix: str) -> list[str]:
    lines = [f"{prefix}{title}:"]
    lines += [line for path in paths for line in wrap(str(path), width, prefix + INDENT)] or [
        f"{prefix}{INDENT}{NOTHING}"
    ]
    return lines


def _files(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    modified, proposed = facts.get("modified_files") or [], facts["proposed_files"]
    count = facts.get("modified_count", len(modified))
    modified_so_far = f"{counted(int(count), 'file', 'files')} modified so far"
    if not proposed:  # reported modified already: nothing is proposed
        said = f"{modified_so_far}, over the limit of {facts.get('limit')}"
        return [*wrap(said, width, prefix), *_paths("modified so far", modified, width, prefix)]
    said = f"{modified_so_far}, {len(proposed)} more proposed; the limit is {facts.get('limit')}"
    return [
        *wrap(said, width, prefix),
        *_paths("proposed", proposed, width, prefix),
        *_paths("modified so far", modified, width, prefix),
    ]


def _scope(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    return [
        *_paths("outside the scope", facts["out_of_scope_paths"], width, prefix),
        *_paths("the task's scope", facts.get("scope") or [], width, prefix),
        *wrap(f"project: {facts.get('project') or absent('project')}", width, prefix),
    ]


def _blocker(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    lines = wrap(f"what blocks it: {name_words(str(facts['signal_type']))}", width, prefix)
    for key, value in sorted((facts.get("details") or {}).items()):
        lines += wrap(f"{field_words(str(key))}: {_text(value)}", width, prefix + INDENT)
    lines += wrap(f"place: {place(facts)}", width, prefix)
    lines += wrap(f"attempted action: {_text(facts.get('attempted_action'))}", width, prefix)
    lines += wrap(f"when: {when(facts.get('at'))}", width, prefix)
    if facts.get("message"):
        lines += wrap(f"message: {headline(str(facts['message']))}", width, prefix, prefix + INDENT)
    return lines


def _budget(facts: Facts, width: int, prefix: str, _error: str) -> list[str]:
    budget = name_words(str(facts.get("budget") or ""))
    said = f"used {facts['used']} of {facts.get('limit')} ({budget}) since {when(facts.get('since'))}"
    return wrap(said, width, prefix)


def _raised(_facts: Facts, _width: int, _prefix: str, _error: str) -> list[str]:
    return []  # the question (or error) and its options are printed above


# Each view a trigger's record may name, and the field its evidence must hold for it (older
# evidence falls back to the generic view, as does a kind whose record names that one).
VIEWS: dict[str, tuple[str | None, Callable[[Facts, int, str, str], list[str]]]] = {
    "occurrences": ("occurrences", _occurrences),
    "attempts": ("attempts", _attempts),
    "pass rates": ("history", _stall),
    "verification history": ("verification_history", _verification),
    "files": ("proposed_files", _files),
    "scope": ("out_of_scope_paths", _scope),
    "blocker": ("signal_type", _blocker),
    "budget": ("used", _budget),
    "question": (None, _raised),
}


def evidence_lines(kind: str, facts: Facts, width: int, prefix: str, error: str) -> list[str]:
    """One trigger's evidence, in the view its ``kind``'s record names; ``error``: its headline."""
    view = VIEWS.get(view_of(kind))
    if view is not None and (view[0] is None or view[0] in facts):
        return view[1](facts, width, prefix, error)
    return facts_lines(facts, width, prefix, error)
