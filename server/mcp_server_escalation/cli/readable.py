"""Text that fits the operator's terminal, and evidence as a person reads it (pure, no I/O).

Every operator command prints lines no wider than ``width``: the terminal's when stdout is
one, else ``FALLBACK_COLUMNS`` (a pipe, a file, a CI log); ``COLUMNS`` overrides both. Long
texts wrap at spaces; a word longer than a line (a path, an id) is never cut, because the
operator copies it into the next command: it goes on a line of its own instead.

Evidence becomes labelled lines (``rules/wording/fact_lines.py``, which the escalation briefing the
model reads uses too); ``--json`` keeps the records whole for scripts.
"""

from __future__ import annotations

import shlex
import shutil

from ..rules.reading.salient import one_line
from ..rules.wording.fact_lines import INDENT, facts_lines, pairs_line, wrap
from ..services.runtime import Runtime
from ..settings import default_db_path

FALLBACK_COLUMNS = 80
# Below this a layout of labels and values no longer reads; a narrower window wraps.
MIN_COLUMNS = 40


def terminal_width() -> int:
    """Columns to print in: ``COLUMNS``, else the terminal's, else ``FALLBACK_COLUMNS``."""
    columns = shutil.get_terminal_size((FALLBACK_COLUMNS, 24)).columns
    return max(MIN_COLUMNS, columns)


def store_flag(rt: Runtime) -> str:
    """`` --db PATH`` when the store is not the default one (printed commands must answer it)."""
    return "" if rt.db.path == str(default_db_path()) else f" --db {shlex.quote(rt.db.path)}"


def error_lines(text: str, width: int, lead: str = "error: ") -> list[str]:
    """``error: text`` wrapped to ``width``; its lines kept, each continued two spaces in.

    The first line always starts with ``lead``, whatever the width, so that a script can
    still match it; a path or an id longer than a line stays whole, on a line of its own."""
    lines: list[str] = []
    for number, part in enumerate(text.splitlines() or [""]):
        indent = part[: len(part) - len(part.lstrip())]
        first = lead if number == 0 else INDENT + indent
        lines += wrap(part.strip(), width, first, INDENT + indent, whole_words=True)
    return lines


def cut(text: str, width: int) -> str:
    """One line of at most ``width`` characters (for a headline under a summary row)."""
    return one_line(text, max(1, width))


def labelled(label: str, text: str, width: int, column: int = 10, *, whole_words: bool = False) -> list[str]:
    """``Label     text`` with the text wrapped under itself."""
    return wrap(text, width, label.ljust(column), " " * column, whole_words=whole_words)


__all__ = [
    "INDENT",
    "cut",
    "error_lines",
    "facts_lines",
    "labelled",
    "pairs_line",
    "store_flag",
    "terminal_width",
    "wrap",
]
