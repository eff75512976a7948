"""``hook claude-code|cursor`` (one host event on stdin -> the host's JSON on stdout) and
``hook install claude-code|cursor [--project|--user] [--dry-run]``.

A hook must never break its host. Whatever goes wrong (malformed JSON, an unknown event, a
store that cannot be opened, a bug) the hook exits 0 with nothing on stdout and one line on
stderr, which the hosts read as "no decision" (the tool call proceeds). Exit 2 would mean
"deny" to them, so even an argument error on a hook run exits 0 (``cli/__init__.py``).
Nothing but the host's JSON is ever written to stdout. Imports stay lazy: this module is
loaded for every command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hooks.events import Answer, HookEvent
    from ..settings import Settings

HOSTS = ("claude-code", "cursor")
# Larger payloads (an Edit's tool_response carries the whole original file) are ignored.
MAX_INPUT_BYTES = 64 * 1024 * 1024


class HookInputError(Exception):
    """The event cannot be handled; the host gets no decision."""


def add_parser(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The ``hook`` command and its subcommands."""
    hook = sub.add_parser("hook", help="run as a coding host's hook (event on stdin), or install the hooks")
    actions = hook.add_subparsers(dest="action", required=True)
    for host in HOSTS:
        common(actions.add_parser(host, help=f"handle one {host} hook event (JSON on stdin)"))
    install = actions.add_parser("install", help="merge the hook configuration into the host's settings")
    common(install)
    install.add_argument("host", choices=HOSTS)
    where = install.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true", help="the project's settings file (default)")
    where.add_argument("--user", action="store_true", help="the user's settings file")
    install.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    install.add_argument(
        "--command",
        dest="hook_command",
        default="mcp-server-escalation",
        help="the script as the host should run it (default: mcp-server-escalation on PATH)",
    )
    install.add_argument(
        "--project-dir", help="the project (default: $CLAUDE_PROJECT_DIR, else the current directory)"
    )


def is_hook_run(argv: Sequence[str]) -> bool:
    """True for ``... hook claude-code|cursor ...``: its argument errors must not exit 2."""
    args = list(argv)
    return "hook" in args and args[args.index("hook") + 1 : args.index("hook") + 2] != ["install"]


def _warn(text: str) -> None:
    sys.stderr.write("mcp-server-escalation hook: " + " ".join(text.split())[:500] + "\n")


def _payload(raw: bytes) -> dict[str, object]:
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"event larger than {MAX_INPUT_BYTES} bytes; ignored")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HookInputError(f"malformed JSON on stdin ({exc}); ignored") from exc
    if not isinstance(payload, dict):
        raise HookInputError("the event is not a JSON object; ignored")
    return payload


async def _answer(settings: Settings, event: HookEvent) -> Answer:
    from ..hooks.runner import handle  # noqa: PLC0415
    from ..services.runtime import open_runtime  # noqa: PLC0415

    async with open_runtime(settings) as rt:
        return await handle(rt, event, settings.hooks, os.environ)


def handle_event(entry: str, raw: bytes, args: argparse.Namespace) -> str:
    """The JSON to print for one raw event ("" for no decision); raises on any problem."""
    import anyio  # noqa: PLC0415

    from ..hooks.protocol import encode_answer, parse_payload  # noqa: PLC0415
    from ..hooks.triage import needs_store, project_dir  # noqa: PLC0415
    from ..settings import Settings  # noqa: PLC0415

    event = parse_payload(_payload(raw))
    if event.kind == "unknown":
        raise HookInputError(f"event {event.name[:64]!r} is not one this hook handles; no decision")
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts)
    if not needs_store(event, settings.hooks, project_dir(event, os.environ)):
        return ""  # a read: let through and never recorded, whatever the store holds
    answer = anyio.run(_answer, settings, event)
    encoded = encode_answer(answer, event, entry)
    return json.dumps(encoded, ensure_ascii=False) if encoded else ""


def run_hook(entry: str, args: argparse.Namespace) -> int:
    """Handle one event from stdin; always exit 0 (see the module docstring)."""
    try:
        output = handle_event(entry, sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), args)
    except HookInputError as exc:
        _warn(str(exc))
        return 0
    except Exception as exc:  # noqa: BLE001 (the top level of a hook: a failure must never block the host)
        _warn(f"no decision: {type(exc).__name__}: {exc}")
        return 0
    if output:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    return 0


def run(args: argparse.Namespace) -> int:
    """``hook <host>`` or ``hook install <host>``."""
    if args.action != "install":
        return run_hook(args.action, args)
    from ..hooks.install import install  # noqa: PLC0415

    project = args.project_dir or os.environ.get("CLAUDE_PROJECT_DIR") or Path.cwd()
    return install(
        args.host,
        user=bool(args.user),
        project_dir=Path(project).expanduser(),
        home=Path.home(),
        command=args.hook_command,
        dry_run=bool(args.dry_run),
        out=print,
    )
