"""Log lines a person reads: each record wrapped to the width of stderr (no heavy imports).

``serve`` and ``console`` log to stderr (stdout is the protocol's on stdio). On a terminal,
or in a host's log pane, a record of 130 characters was cut by the window or ran past it;
here it wraps like the operator commands' output, continued four spaces in. A word longer
than a line (a path) stays whole; a traceback is left as Python wrote it.
"""

from __future__ import annotations

import logging
import os
import sys
import textwrap

FALLBACK_COLUMNS = 80
# Below this a wrapped line says too little; a narrower window wraps the lines itself.
MIN_COLUMNS = 40
CONTINUED = "    "


def stderr_width() -> int:
    """Columns for stderr: ``COLUMNS``, else stderr's terminal, else ``FALLBACK_COLUMNS``."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return max(MIN_COLUMNS, int(given))
    try:
        return max(MIN_COLUMNS, os.get_terminal_size(sys.stderr.fileno()).columns)
    except (OSError, ValueError):  # not a terminal, or no file behind stderr
        return FALLBACK_COLUMNS


class WrappedFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose message lines are wrapped to ``width``."""

    def __init__(self, fmt: str, width: int) -> None:
        super().__init__(fmt)
        self.width = width

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        """The formatted record, each of its lines wrapped under its own indentation."""
        lines: list[str] = []
        for part in super().formatMessage(record).splitlines() or [""]:
            lead = part[: len(part) - len(part.lstrip())]
            lines += textwrap.wrap(
                part.strip(),
                self.width,
                initial_indent=lead,
                subsequent_indent=lead + CONTINUED,
                break_long_words=False,
                break_on_hyphens=False,
            ) or [part]
        return "\n".join(lines)


def report_error(text: str) -> None:
    """``error: text`` on stderr, wrapped like every operator output (the prefix stays first)."""
    from .readable import error_lines  # noqa: PLC0415

    sys.stderr.write("".join(f"{line}\n" for line in error_lines(text, stderr_width())))
    sys.stderr.flush()
