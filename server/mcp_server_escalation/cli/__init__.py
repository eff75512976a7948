"""The console script ``mcp-server-escalation``.

With no subcommand it serves MCP over stdio (what agent configs launch). Operator commands
(``escalations``, ``tasks``, ``db``) call the same services as the MCP tools on the same
store, so the operator and the agent can never disagree. Imports stay lazy: the operator
commands never load the MCP SDK, and ``serve`` loads only what serving needs. The command
line's parsers are ``parsers.py``'s; this module reads the command line and runs the command.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from ..errors import EscalationError
from .log_lines import WrappedFormatter, report_error, stderr_width
from .parsers import build_parser, named_command, serve_options_only, top_parser

# The module and function that run each command, imported only when it runs: the operator
# commands never load the MCP SDK, and serve loads only what serving needs. Any other
# command (escalations, tasks, stats, db) is the operator module's.
RUNNERS: dict[str | None, tuple[str, str]] = {
    None: ("serve", "serve"),
    "serve": ("serve", "serve"),
    "demo": ("demo", "run"),  # the only command that loads the SDK's client
    "console": ("console", "run"),
    "hook": ("hook", "run"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    given = sys.argv[1:] if argv is None else list(argv)
    args = _parse(given)
    if args is None:
        return 0  # to a host, a hook's exit 2 means "deny": a bad hook command line must not block it
    _log_to_stderr(args.command)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command's exit code; an error it raises is one line on stderr."""

    module, function = RUNNERS.get(args.command, ("operator", "run"))
    try:
        run: Callable[[argparse.Namespace], int] = getattr(import_module(f".{module}", __name__), function)
        return run(args)
    except EscalationError as exc:
        report_error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except OSError as exc:  # an unwritable store path, a full disk, a broken pipe
        report_error(str(exc))
        return 1
    except BaseExceptionGroup as group:
        return _exit_of_group(group, EscalationError)


def _parse(given: list[str]) -> argparse.Namespace | None:
    """The command line read; None for a hook's command line that argparse refused."""
    if serve_options_only(given):
        args = top_parser().parse_args(given)
        args.command = None
        return args
    try:
        return build_parser(only=named_command(given)).parse_args(given)
    except SystemExit as exc:
        from .hook import is_hook_run  # noqa: PLC0415

        if exc.code == 2 and is_hook_run(given):
            return None
        raise


def _log_to_stderr(command: str | None) -> None:

    handler = logging.StreamHandler(sys.stderr)  # stdout belongs to the protocol
    line = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    # A hook's stderr is its host's, and the hook daemon's a log file for grep: one line each.
    wrapped = command != "hook"
    handler.setFormatter(WrappedFormatter(line, stderr_width()) if wrapped else logging.Formatter(line))
    logging.basicConfig(
        level=logging.INFO if command in (None, "serve", "console") else logging.WARNING,
        handlers=[handler],
    )


def _exit_of_group(group: BaseExceptionGroup[BaseException], expected: type[Exception]) -> int:
    """The SDK runs the lifespan in a task group: a store that cannot be opened arrives
    wrapped. Say it in one line, like every other door does; anything else is raised."""
    if group.subgroup(BrokenPipeError) is not None:
        return _reader_gone()
    matched, _rest = group.split(expected)
    if matched is None:
        raise group
    report_error(str(_first(matched)))
    return 1


def _reader_gone() -> int:
    """The reader of stdout went away (``| head``): what it wanted was printed; end quietly.

    Output still buffered would fail again when the interpreter flushes stdout at exit and
    print "Exception ignored ... BrokenPipeError": stdout is pointed at the null device.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf
