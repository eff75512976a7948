"""The command line's parsers: the top-level one a host's launch line needs, and each
subcommand's, built only for the command given (each imports only what that one needs).

``cli/__init__.py`` reads the command line with these and runs the command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from .. import __version__
from .log_lines import report_error

# The options a host's launch line uses. A command line of only these is parsed by the
# top-level parser alone: building every subcommand's parser (and importing their modules)
# was ~10 ms of each server start, whose cold start must stay within 1.15x of a minimal
# server (benchmarks/README.md).
SERVE_OPTIONS = ("--db", "--config", "--prompts")
JSON_HELP = "print the full records as JSON, for scripts (default: text that fits the terminal)"


class OperatorParser(argparse.ArgumentParser):
    """argparse's parser, whose refusal of a mistyped command line fits the terminal like
    every other error (its subcommands' parsers are of the same class)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        report_error(message)
        self.exit(2)  # argparse's exit code for a command line it refuses


# Who may say where a request came from (X-Forwarded-For): nobody unless named, or a client
# could pick the address the console's login limit holds back.
TRUSTED_PROXY_HELP = (
    "http: the address of a reverse proxy in front (repeatable; an IP address or network): "
    "only requests from it have their X-Forwarded-For header believed, so the console's "
    "login limit holds back the browser's address rather than the proxy's (default: none, "
    "the header is ignored)"
)


def _common(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    # Accepted before or after the subcommand; a subcommand's copy must not overwrite a value
    # given before it, hence SUPPRESS there.
    default = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--db", default=default, help="store path (default: $ESCALATION_DB or the per-user store)"
    )
    parser.add_argument(
        "--config",
        default=default,
        help="TOML config file (default: $ESCALATION_CONFIG, else the per-user config.toml if it exists)",
    )
    parser.add_argument(
        "--prompts",
        default=default,
        help="folder of prompt templates overriding the defaults (default: $ESCALATION_PROMPTS, else none)",
    )


# The largest id SQLite holds (models/limits.py SQLITE_INTEGER_MAX; not imported: it loads
# pydantic, and serving must not pay for it).
ID_MAX = 2**63 - 1
# resolve_escalation's file limit, the same bound as the tool's.
FILE_LIMIT_MAX = 1_000_000
# The largest TCP port (0: any free one the system picks).
PORT_MAX = 65535


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``, else a usage error naming both."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} must be at least {low} and at most {high}")
        return value

    return parse


def _past_serve_options(argv: Sequence[str]) -> int:
    """Where the ``SERVE_OPTIONS`` (with their values) that ``argv`` starts with end."""
    position = 0
    while position < len(argv):
        token = argv[position]
        if "=" in token and token.split("=", 1)[0] in SERVE_OPTIONS:
            position += 1
        elif token in SERVE_OPTIONS and position + 1 < len(argv):
            position += 2
        else:
            break
    return position


def serve_options_only(argv: Sequence[str]) -> bool:
    """Is ``argv`` nothing but ``SERVE_OPTIONS`` with their values (no subcommand, no help)?"""
    return _past_serve_options(argv) == len(argv)


def top_parser() -> argparse.ArgumentParser:
    """The options before any subcommand: what a host's launch line uses."""
    parser = OperatorParser(
        prog="mcp-server-escalation",
        description="MCP server giving coding agents objective escalation; operator CLI.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _common(parser, top=True)
    return parser


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_stats(sub: Subparsers) -> None:
    from .monitor_args import add_stats_parser  # noqa: PLC0415 (see SERVE_OPTIONS)

    add_stats_parser(sub, _common)


def _add_hook(sub: Subparsers) -> None:
    from .hook import add_parser  # noqa: PLC0415

    add_parser(sub, _common)


def _add_console(sub: Subparsers) -> None:
    from .console import add_parser  # noqa: PLC0415 (it loads the operator commands and the settings)

    add_parser(sub, _common)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, the top-level options and that subcommand alone.

    A subcommand's parser costs ~0.3-1 ms to build (argparse looks up translations and the
    terminal's width for every argument), the whole ~4 ms plus the console's modules, and a
    hook run, a process of its own at every event, needs just its own (standalone, ~90 ms
    less: ``benchmarks/README.md``). A command line naming the subcommand parses the same
    either way (``tests/test_cli.py``).
    """
    parser = top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="(default: serve)")
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(sub)
    return parser


def named_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names after the top-level options, if it names one surely:
    None when anything but ``SERVE_OPTIONS`` comes first (help, an abbreviation argparse
    would expand, a mistake), or the first word is no subcommand (the whole parser then
    reads the line and says what is wrong)."""
    rest = argv[_past_serve_options(argv) :]
    return rest[0] if rest and rest[0] in COMMANDS else None


def _add_serve(sub: Subparsers) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve MCP (stdio by default)",
        description="Serve MCP to agents. On stdio (the default; what an agent's host launches) "
        "stdout carries the protocol only and every log line goes to stderr. Over http it "
        "listens on --host and --port and, when ESCALATION_OPERATOR_TOKEN is set, serves the "
        "operator console next to /mcp.",
    )
    _common(serve)
    serve.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="how clients connect (default: stdio)"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="http: the address to listen on (default: 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=bounded(0, PORT_MAX), default=8765, help="http: the port to listen on (default: 8765)"
    )
    serve.add_argument(
        "--role",
        choices=["agent", "operator"],
        default="agent",
        help="what callers may do: agents record and ask, operators also answer (default: agent)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME[:PORT]",
        help="http: a Host name clients use beyond loopback (repeatable; without a port: any port; "
        "default: loopback names only)",
    )
    serve.add_argument(
        "--allowed-origin",
        action="append",
        metavar="ORIGIN",
        help="http: a browser Origin allowed to call, e.g. https://console.example (repeatable; "
        "default: loopback origins only)",
    )
    serve.add_argument(
        "--secure-cookie",
        action="store_true",
        help="http: mark the console's session cookie Secure, when it is reached over https through "
        "a TLS proxy (default: off)",
    )
    serve.add_argument("--trusted-proxy", action="append", metavar="ADDRESS", help=TRUSTED_PROXY_HELP)


def _add_escalations(sub: Subparsers) -> None:
    from .monitor_args import add_watch_parser  # noqa: PLC0415 (see SERVE_OPTIONS)

    esc = sub.add_parser("escalations", help="list, show and answer escalations")
    esc_sub = esc.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = esc_sub.add_parser("list", help="escalation summaries, newest first")
    _common(listing)
    listing.add_argument(
        "--status",
        choices=["pending", "resolved", "all"],
        default="pending",
        help="which escalations: waiting for an answer, answered or closed, or both (default: pending)",
    )
    listing.add_argument(
        "--task", metavar="TASK_ID", help="only this task's escalations (default: every task)"
    )
    listing.add_argument(
        "--limit", type=bounded(1, ID_MAX), default=50, help="at most this many (default: 50)"
    )
    listing.add_argument("--json", action="store_true", help=JSON_HELP)
    show = esc_sub.add_parser("show", help="one escalation in full")
    _common(show)
    _escalation_id(show)
    show.add_argument("--json", action="store_true", help=JSON_HELP)
    _add_respond(esc_sub)
    add_watch_parser(esc_sub, _common)


def _escalation_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "id",
        type=bounded(1, ID_MAX),
        metavar="ID",
        help="the escalation's number (escalations list shows them)",
    )


def _add_respond(esc_sub: Subparsers) -> None:
    respond = esc_sub.add_parser(
        "respond",
        help="answer an escalation as the operator",
        # argparse prints a required group on one line, whatever the width: spelled out here.
        usage="%(prog)s ID\n"
        "       (--guidance TEXT | --override TEXT | --terminate [TEXT] | --approve)\n"
        "       [--file-limit N] [--add-scope GLOB] [--verdict useful|false-alarm]\n"
        "       [--responder RESPONDER] [--json]\n"
        "       [--db DB] [--config CONFIG] [--prompts PROMPTS] [-h]",
    )
    _common(respond)
    _escalation_id(respond)
    answer = respond.add_mutually_exclusive_group(required=True)
    answer.add_argument("--guidance", metavar="TEXT", help="advice; the agent continues its own way")
    answer.add_argument("--override", metavar="TEXT", help="the approach the agent must follow instead")
    answer.add_argument(
        "--terminate", metavar="TEXT", nargs="?", const="", help="stop the task, with an optional reason"
    )
    answer.add_argument(
        "--approve",
        action="store_true",
        help="allow the change the agent asked for (only where escalations show offers it)",
    )
    respond.add_argument(
        "--file-limit",
        type=bounded(1, FILE_LIMIT_MAX),
        metavar="N",
        help="with --approve: the task's new file limit (default: unchanged)",
    )
    respond.add_argument(
        "--add-scope",
        action="append",
        default=[],
        metavar="GLOB",
        help="with --approve: widen the task's scope (repeatable; default: unchanged)",
    )
    respond.add_argument(
        "--verdict",
        choices=["useful", "false-alarm"],
        help="was this escalation useful or a false alarm? kept with the answer and counted by stats "
        "per type and project (default: no verdict)",
    )
    respond.add_argument("--responder", help="who answers, as recorded (default: cli:$USER)")
    respond.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_tasks(sub: Subparsers) -> None:
    task = sub.add_parser("tasks", help="list and show tasks")
    task_sub = task.add_subparsers(dest="action", required=True, metavar="ACTION")
    task_list = task_sub.add_parser("list", help="tasks with their counters and pending escalations")
    _common(task_list)
    task_list.add_argument(
        "--status",
        choices=["active", "paused", "terminated_by_human", "completed", "abandoned"],
        metavar="STATUS",
        help="only tasks in this state: active, paused, terminated_by_human, completed or "
        "abandoned (default: every state)",
    )
    task_list.add_argument(
        "--limit", type=bounded(1, ID_MAX), default=50, help="at most this many (default: 50)"
    )
    task_list.add_argument("--json", action="store_true", help=JSON_HELP)
    task_show = task_sub.add_parser("show", help="one task: counters, limits, files, tests, escalations")
    _common(task_show)
    task_show.add_argument("id", metavar="TASK_ID", help="the task's id, whole (tasks list shows them)")
    task_show.add_argument("--json", action="store_true", help=JSON_HELP)
    story = task_sub.add_parser(
        "timeline",
        help="a task's history, oldest first: every failure, attempt, progress report, edit check, "
        "escalation and answer, with the files each touched, a page at a time",
    )
    _common(story)
    story.add_argument("id", metavar="TASK_ID", help="the task's id, whole (tasks list shows them)")
    story.add_argument(
        "--after",
        type=bounded(0, ID_MAX),
        default=0,
        metavar="N",
        help="start after this action (the previous page prints the command for the next one; "
        "default: 0, the first page)",
    )
    story.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_failures(sub: Subparsers) -> None:
    failures = sub.add_parser("failures", help="show a recorded failure's whole output")
    failures_sub = failures.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = failures_sub.add_parser(
        "show",
        help="a failure's latest occurrences with their whole output, the error marked, and what "
        "changed from one to the next",
    )
    _common(show)
    show.add_argument(
        "id", metavar="FAILURE_ID", help="the failure's id, e.g. F-12 (escalations show names it)"
    )
    show.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_demo(sub: Subparsers) -> None:
    demo = sub.add_parser(
        "demo",
        help="play the whole escalation loop against the real server",
        description="Play the escalation loop once: a scripted agent talks to the real server over "
        "stdio, an operator answers from another process, and each step's answer is checked (exit 1 "
        "names the step that differed). It uses a throw-away store unless --db names one, and "
        "notifies nobody.",
    )
    _common(demo)
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the throw-away store and print commands to look at it (default: remove it; a "
        "--db store is always kept)",
    )


def _add_db(sub: Subparsers) -> None:
    from .monitor_args import add_backup_parser, add_check_parser, add_copy_parser  # noqa: PLC0415 (see SERVE_OPTIONS)

    db = sub.add_parser("db", help="the store file")
    db_sub = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("path", "print the store path (exit 1 when no store is there)"),
        ("init", "create the store (and its folders) if it does not exist, and migrate it"),
        ("migrate", "apply pending migrations to an existing store"),
    ):
        _common(db_sub.add_parser(name, help=text))
    add_backup_parser(db_sub, _common)
    add_check_parser(db_sub, _common)
    add_copy_parser(db_sub, _common)


# Each subcommand and what adds its parser (importing only what that one needs), in the
# order the help lists them.
COMMANDS: dict[str, Callable[[Subparsers], None]] = {
    "serve": _add_serve,
    "escalations": _add_escalations,
    "tasks": _add_tasks,
    "failures": _add_failures,
    "stats": _add_stats,
    "demo": _add_demo,
    "hook": _add_hook,
    "console": _add_console,
    "db": _add_db,
}
