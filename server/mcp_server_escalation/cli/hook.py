"""``hook claude-code|cursor|codex`` (one host event on stdin -> the host's JSON on stdout),
``hook relay`` (answer hook runs from a long-lived process), ``hook daemon`` (the same,
started by a hook run and ending by itself: ``hooks/relay_daemon.py``) and
``hook install claude-code|cursor|codex [--project|--user] [--dry-run]`` (``--http URL``: a
remote agent's Claude Code posts its events to a ``serve --transport http`` at URL instead;
``--wake-minutes N``: Claude Code's wake handler too) and ``hook uninstall <host>`` (our
handlers out of the host's settings). The hosts are those ``hooks/hosts.py`` registers.

A hook run first offers itself to a running server of its store (``hooks/relay.py``, before
this module is even imported: ``launch.py``); what follows here is the run that does the
work itself, when no server takes it.

A hook must never break its host. Whatever goes wrong (malformed JSON, an unknown event, a
store that cannot be opened, a bug) the hook exits 0 with nothing on stdout and one line on
stderr, which the hosts read as "no decision" (the tool call proceeds); what it says, and
where the details go, is ``hooks/outcome.py``'s, as for the relay and the hook route.
Exit 2 would mean "deny" to them, so even an argument error on a hook run exits 0
(``cli/__init__.py`` and ``cli/parsers.py``); the one exit 2 is the wake hook's (``cli/hook_wake.py``).
Nothing but the host's JSON is ever written to stdout. Imports of what only some of its
commands need stay lazy: this module is loaded for every command line (what every command
line loads anyway, the settings and the errors, is imported here at once).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OUTAGE_LOG, StoreUnavailable
from ..hooks.budget import within_what_is_left
from ..hooks.hosts import NAMES, describe
from ..process import server_ready
from ..settings import Settings
from .hook_install import add_install_parsers
from .hook_wake import add_wake_option

# The loggers of the store's modules (``store/``): kept off a hook run's stderr.
STORE_LOG = "mcp_server_escalation.store"

if TYPE_CHECKING:
    from ..hooks.outcome import CommandAnswer, Ending
    from ..hooks.spool import Kept
    from ..hooks.triage import Triaged
    from ..prompts import PromptBook


def add_parser(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The ``hook`` command and its subcommands."""
    hook = sub.add_parser(
        "hook",
        help="run as a coding host's hook (event on stdin), or install the hooks",
        description="Run as a coding host's hook, or install the hooks into a host's settings. A "
        "hook run reads one event (JSON) on stdin and prints the host's answer (JSON) on stdout, "
        "or nothing for no decision; whatever goes wrong, it says so in one line on stderr and "
        "exits 0, so that the host's tool call proceeds.",
    )
    actions = hook.add_subparsers(dest="action", required=True, metavar="ACTION")
    for host in NAMES:
        handler = actions.add_parser(
            host,
            help=f"handle one {host} hook event (JSON on stdin)",
            description=f"Handle one {host} hook event: its JSON on stdin, the host's answer "
            "on stdout (nothing: no decision), a problem as one line on stderr; exit 0.",
        )
        common(handler)
        if describe(host).wake_event is not None:
            add_wake_option(handler)
    relay = actions.add_parser(
        "relay", help="answer hook runs for the store from this process (when no MCP server runs)"
    )
    common(relay)
    daemon = actions.add_parser(
        "daemon",
        help="like relay, but exits after [hooks] relay_idle_minutes idle, when the store file goes, "
        "or when another process serves the store (a hook run starts it when nothing listens)",
    )
    common(daemon)
    daemon.add_argument(
        "--lock-fd",
        type=int,
        metavar="FD",
        help="the store's lock file, already locked by the hook run that starts the daemon "
        "(default: none; the daemon takes the lock itself)",
    )
    add_install_parsers(actions, common)


def is_hook_run(argv: Sequence[str]) -> bool:
    """True for ``... hook claude-code|cursor|codex ...``: its argument errors must not exit 2."""
    args = list(argv)
    action = args[args.index("hook") + 1 : args.index("hook") + 2] if "hook" in args else None
    return action is not None and action not in (["install"], ["uninstall"], ["relay"], ["daemon"])


async def _answer(settings: Settings, entry: str, triaged: Triaged, raw: bytes) -> tuple[str, Kept | None]:
    from ..hooks.budget import runtime_within_budget  # noqa: PLC0415
    from ..hooks.spool import Spool, Spooled, answer_or_keep, kept_env, kept_or_raise, spool_folder  # noqa: PLC0415

    event = Spooled(entry, raw.decode("utf-8"), kept_env(os.environ), str(Path.cwd()))
    spool = Spool(spool_folder(settings.db_path, os.environ))
    try:
        async with runtime_within_budget(settings) as rt:
            return await answer_or_keep(rt, settings, triaged, event, spool)
    except StoreUnavailable as exc:  # the store did not open: the event waits in the spool
        return "", kept_or_raise(exc, triaged, event, spool)


def _cwd() -> str:
    try:
        return str(Path.cwd())
    except OSError:  # the working directory was removed: a relative store has no socket
        return "/"


def _book(args: argparse.Namespace) -> PromptBook:
    """The settings' prompts; the packaged ones when those cannot be had (the failure may be theirs)."""
    from ..datafiles import data_dir  # noqa: PLC0415
    from ..prompts import PromptBook  # noqa: PLC0415
    from ..services.runtime import prompt_book  # noqa: PLC0415

    try:
        return prompt_book(Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts))
    except Exception:  # noqa: BLE001 (whatever failed there, the bug is still to be said)
        return PromptBook.load(data_dir("prompts"))


def answer_for(args: argparse.Namespace, ending: Ending, settings: Settings | None = None) -> CommandAnswer:
    """What a hook run says of ``ending``, in the prompts of ``settings`` (loaded only now), else
    of ``args`` (the packaged ones when those cannot be had: the failure may be theirs)."""
    from ..hooks.outcome import DaemonsLog, for_command  # noqa: PLC0415
    from ..services.runtime import prompt_book  # noqa: PLC0415

    book = _book(args) if settings is None else prompt_book(settings)
    return for_command(ending, book, DaemonsLog(args.db, os.environ, _cwd()))


def say(answer: CommandAnswer) -> None:
    """Print a hook run's answer: its lines on stderr, the host's JSON on stdout."""
    sys.stderr.write(answer.stderr)
    if answer.stdout:
        sys.stdout.write(answer.stdout)
        sys.stdout.flush()


def handle_event(entry: str, raw: bytes, args: argparse.Namespace) -> CommandAnswer:
    """What to print for one raw event; raises on any problem but an event it cannot use,
    which it says in the prompts' words."""
    from ..hooks.dispatch import HookInputError, prepare  # noqa: PLC0415
    from ..hooks.outcome import CommandAnswer, answered, failed  # noqa: PLC0415

    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts)
    try:
        triaged = prepare(raw, settings, os.environ, entry=entry)
    except HookInputError as exc:
        return answer_for(args, failed(exc), settings)
    if triaged is None:
        return CommandAnswer()
    import anyio  # noqa: PLC0415 (a read never starts an event loop)

    output, kept = anyio.run(_answer, within_what_is_left(settings), entry, triaged, raw)
    if kept is None:
        return CommandAnswer.giving(output)  # nothing to word: no prompts loaded
    return answer_for(args, answered(output, kept), settings)


def run_hook(entry: str, args: argparse.Namespace) -> int:
    """Handle one event from stdin; always exit 0 (see the module docstring)."""
    # The store's own lines (an outage, a refused write) name it and quote its database: a
    # hook run says what happened in words instead, and writes the store's words to its relay
    # daemons' log.
    store_logs = [logging.getLogger(name) for name in (STORE_LOG, OUTAGE_LOG)]
    levels = [store_log.level for store_log in store_logs]
    for store_log in store_logs:
        store_log.setLevel(logging.CRITICAL)
    try:
        return _run_hook(entry, args)
    finally:
        for store_log, level in zip(store_logs, levels, strict=True):
            store_log.setLevel(level)


def _run_hook(entry: str, args: argparse.Namespace) -> int:
    from ..hooks.dispatch import MAX_INPUT_BYTES  # noqa: PLC0415

    try:
        answer = handle_event(entry, sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), args)
    except Exception as exc:  # noqa: BLE001 (the top level of a hook: a bug must never block the host)
        from ..hooks.outcome import failed  # noqa: PLC0415

        answer = answer_for(args, failed(exc))
    say(answer)
    return answer.exit_code


def run_relay(args: argparse.Namespace) -> int:
    """``hook relay``: serve the store's hook socket until interrupted."""
    import signal  # noqa: PLC0415

    import anyio  # noqa: PLC0415

    from ..hooks.relay_server import relay  # noqa: PLC0415
    from ..services.runtime import open_runtime  # noqa: PLC0415

    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts)
    server_ready()

    async def serve() -> int:
        async with open_runtime(settings) as rt, relay(rt) as path:
            if path is None:
                from .log_lines import report_error  # noqa: PLC0415

                report_error("no relay socket for this store (see docs/hooks.md)")
                return 1
            print(f"hook relay for {settings.db_path} on {path}", file=sys.stderr)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    break  # leave cleanly: the socket is removed on the way out
        return 0

    return anyio.run(serve)


def run_daemon(args: argparse.Namespace) -> int:
    """``hook daemon``: serve the store's hook socket until idle, replaced or stopped."""

    import anyio  # noqa: PLC0415

    from ..hooks.relay_daemon import run_daemon as serve  # noqa: PLC0415

    logging.getLogger().setLevel(logging.INFO)  # its log file: when it started, why it ended
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts)
    server_ready()
    anyio.run(serve, settings, args.lock_fd)
    return 0


def run(args: argparse.Namespace) -> int:
    """``hook <host>``, ``hook relay``, ``hook daemon``, ``hook install|uninstall <host>``."""
    if args.action == "relay":
        return run_relay(args)
    if args.action == "daemon":
        return run_daemon(args)
    if args.action in ("install", "uninstall"):
        from .hook_install import install_hooks, uninstall_hooks  # noqa: PLC0415

        return install_hooks(args) if args.action == "install" else uninstall_hooks(args)
    if getattr(args, "wake_minutes", None) is not None:
        from .hook_wake import run_wake  # noqa: PLC0415

        return run_wake(args.action, args)
    return run_hook(args.action, args)
