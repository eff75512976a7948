"""Stored facts (a trigger's criteria, an escalation's evidence) as lines a person or a model
reads (pure, no I/O).

Evidence is stored as nested records (``rules/bounds/evidence.py``); printed as JSON it was three
screens of braces and escaped newlines. Here it becomes labelled lines: a run of errors as
``file:line  attempted action  salient error``, test runs as a line of pass rates, files
against their limit, fields and flags in words. The operator's CLI prints these lines, and
the escalation briefing the model reads is made of them.
"""

from __future__ import annotations

import textwrap
from typing import Any

from ..bounds.evidence import is_clipped
from ..reading.salient import headline, one_line
from .words import absent, counted, field_words, name_words, rate_words, yes_no

# Every control character (newlines, tabs, ESC of a colour code) becomes a space.
_CONTROLS = dict.fromkeys((*range(32), 127, *range(128, 160)), " ")
INDENT = "  "


def wrap(
    text: str, width: int, first: str = "", rest: str | None = None, *, whole_words: bool = False
) -> list[str]:
    """``text`` wrapped to ``width`` after the prefixes ``first`` and ``rest``.

    Control characters become spaces (an agent's text must not drive the terminal); runs
    of spaces are kept, so columns separated by two spaces stay apart. A word longer than a
    line (a deep path) is cut across lines, unless ``whole_words``: an id the operator
    copies into the next command stays whole, on a line of its own, however long."""
    flat = text.translate(_CONTROLS)
    following = " " * len(first) if rest is None else rest
    return textwrap.wrap(
        flat,
        width,
        initial_indent=first,
        subsequent_indent=following,
        break_long_words=not whole_words,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _rate(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, float) else str(value)


def _said(message: str, error: str) -> str:
    # A clipped message lost its middle, where a runner prints the error: the trigger's
    # headline was found in the whole text.
    return error if error and is_clipped(message) else headline(message)


def _occurrence(item: dict[str, Any], error: str, width: int, prefix: str) -> list[str]:
    """``file:line  attempted action  error``; a repeat (no message of its own) shows none."""
    where = str(item.get("file") or "-")
    if item.get("line") is not None:
        where += f":{item['line']}"
    message = str(item.get("message") or "")
    said = _said(message, error) if message else ""
    action = one_line(str(item.get("attempted_action") or item.get("command") or ""), 4000)
    parts = [part for part in (one_line(where, 4000), action, said) if part]
    if not item.get("file") and not item.get("attempted_action") and not message:
        parts = [pairs_line(item)]
    return wrap("  ".join(parts), width, prefix + "- ", prefix + "    ")


def _run(name: str, run: dict[str, Any], width: int, prefix: str, error: str) -> list[str]:
    """A run of errors or attempts: each shown item on a line, what was left out as a count."""
    lines = wrap(f"{name}: {run.get('count', 0)} in all", width, prefix)
    for group, title in (("at_firing", "when it fired"), ("latest", "since then")):
        items = run.get(group) or []
        if not items:
            continue
        lines.append(f"{prefix}{INDENT}{title}:")
        for item in items:
            lines += _occurrence(item, error, width, prefix + INDENT * 2)
    if run.get("omitted"):
        lines.append(f"{prefix}{INDENT}and {run['omitted']} more in the store")
    return lines


def _test_runs(name: str, runs: list[dict[str, Any]], width: int, prefix: str) -> list[str]:
    """Test runs as one line of pass rates, oldest first, and the last run's counts."""
    rates = " -> ".join(_rate(r.get("pass_rate")) for r in runs)
    last = runs[-1]
    tail = f" (last: {last.get('passed', 0)} passed, {last.get('failed', 0)} failed)"
    return wrap(
        f"{name}: pass rate over {counted(len(runs), 'run', 'runs')} {rates}{tail}",
        width,
        prefix,
        prefix + INDENT,
    )


def _is_test_runs(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) and "pass_rate" in v for v in value)
    )


def _files(facts: dict[str, Any], width: int, prefix: str) -> list[str]:
    modified = facts.get("modified_files") or []
    proposed = facts.get("proposed_files") or []
    count = facts.get("modified_count", len(modified))
    lines = wrap(
        f"files: {count} modified, {len(proposed)} more proposed; limit {_limit(facts.get('limit'))}",
        width,
        prefix,
    )
    for title, paths in (("proposed", proposed), ("modified", modified)):
        if paths:
            lines.append(f"{prefix}{INDENT}{title}:")
            lines += [line for path in paths for line in wrap(str(path), width, prefix + INDENT * 2)]
    return lines


def _limit(value: object) -> str:
    return absent("limit") if value is None else str(value)


def _scalar(value: object) -> str:
    if value is None or value == "":
        return absent()
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, list | dict):
        return (
            (", ".join(_scalar(v) for v in value) or absent())
            if isinstance(value, list)
            else f"({pairs_line(value)})"
        )
    if isinstance(value, str):
        return headline(value) if "\n" in value else name_words(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _is_run(value: object) -> bool:
    return isinstance(value, dict) and "at_firing" in value and "count" in value


def facts_lines(facts: dict[str, Any], width: int, prefix: str = INDENT, error: str = "") -> list[str]:
    """One trigger's evidence as labelled lines (never JSON), each at most ``width`` wide.

    ``error``: the trigger's headline, shown for a message whose middle was clipped."""
    lines: list[str] = []
    if "proposed_files" in facts or "modified_files" in facts:
        lines += _files(facts, width, prefix)
    for key, value in sorted(facts.items()):
        if key in ("modified_files", "proposed_files", "modified_count", "limit") and (
            "proposed_files" in facts or "modified_files" in facts
        ):
            continue
        name = field_words(key)
        if _is_run(value):
            lines += _run(name, value, width, prefix, error)
        elif _is_test_runs(value):
            lines += _test_runs(name, value, width, prefix)
        elif isinstance(value, dict):
            lines += wrap(f"{name}:", width, prefix)
            lines += facts_lines(value, width, prefix + INDENT, error)
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            lines += wrap(f"{name}:", width, prefix)
            for item in value:
                text = pairs_line(item) if isinstance(item, dict) else _scalar(item)
                lines += wrap(text, width, prefix + INDENT + "- ", prefix + INDENT * 2)
        elif isinstance(value, list):
            lines += wrap(f"{name}: {', '.join(_scalar(v) for v in value) or absent()}", width, prefix)
        else:
            lines += wrap(f"{name}: {rate_words(key, value) or _scalar(value)}", width, prefix)
    return lines


def pairs_line(value: dict[str, Any]) -> str:
    """``key value, key value`` of a flat record (criteria, observed, an action's detail)."""
    return ", ".join(f"{field_words(k)} {rate_words(k, v) or _scalar(v)}" for k, v in sorted(value.items()))
