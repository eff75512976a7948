"""``hook install <host>`` and ``hook uninstall <host>``: the command lines that write our hooks
into a host's settings file, or take them out (``hooks/install.py`` does the writing).

The command written is this script by absolute path with the store, config and prompts
chosen explicitly (the hosts' environment may lack the installer's variables, and their
working directory differs); ``--http URL`` writes http handlers instead, and
``--wake-minutes N`` Claude Code's wake handler beside its Stop hook. Imports stay lazy:
``cli/hook.py`` builds these parsers on every hook command line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError
from ..hooks.hosts import NAMES, describe
from ..locations import is_database_url
from ..settings import Settings
from .hook_wake import wake_minutes

SCRIPT_NAMES = ("mcp-server-escalation", "mcp-server-escalation.exe")


def add_install_parsers(
    actions: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    """``hook install <host>`` and ``hook uninstall <host>``."""
    install = actions.add_parser("install", help="merge the hook configuration into the host's settings")
    common(install)
    _add_settings_file(install)
    install.add_argument(
        "--command",
        dest="hook_command",
        help="the script as the host should run it (default: this script by absolute path)",
    )
    install.add_argument(
        "--http",
        metavar="URL",
        help="claude-code only: post each event to the HTTP server at URL (serve --transport http "
        "on another machine; its address, /hooks/claude-code is added) with the agent's "
        "$ESCALATION_AGENT_TOKEN and $ESCALATION_TASK (default: run this script on each event)",
    )
    install.add_argument(
        "--wake-minutes",
        dest="install_wake_minutes",
        type=wake_minutes,
        metavar="N",
        help="claude-code only: also the asyncRewake Stop handler that waits up to N minutes for "
        "the answer to an escalation and wakes the idle agent with it (default: not added; one "
        "added before keeps its minutes)",
    )
    uninstall = actions.add_parser("uninstall", help="take our hooks out of the host's settings")
    common(uninstall)
    _add_settings_file(uninstall)


def _add_settings_file(parser: argparse.ArgumentParser) -> None:
    """The host and which of its settings files: ``hook install`` and ``hook uninstall``."""
    parser.add_argument("host", choices=NAMES, help="the coding host whose settings to change")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true", help="the project's settings file (the default)")
    where.add_argument(
        "--user", action="store_true", help="the user's settings file (default: the project's)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would change and the settings file it would write; write nothing (default: write)",
    )
    parser.add_argument(
        "--project-dir", help="the project (default: $CLAUDE_PROJECT_DIR, else the current directory)"
    )


def this_script() -> str:
    """This console script as a shell word, by absolute path (else ``python -m``)."""
    import shlex  # noqa: PLC0415

    launched = Path(sys.argv[0])
    if launched.name in SCRIPT_NAMES and launched.is_file():
        return shlex.quote(str(launched.absolute()))  # a symlink (pipx) stays one: upgrades keep it
    beside = Path(sys.executable).parent / SCRIPT_NAMES[0]
    if beside.is_file():
        return shlex.quote(str(beside))
    return f"{shlex.quote(sys.executable)} -m mcp_server_escalation"


def _given_command(command: str) -> str:
    """``--command`` as given, once its program is known to run here."""
    import shlex  # noqa: PLC0415

    try:
        words = shlex.split(command)
    except ValueError as exc:  # an unclosed quote
        raise ConfigError(f"--command {command!r}: {exc} (nothing was changed)") from exc
    if not words or shutil.which(words[0]) is None:
        raise ConfigError(
            f"--command {command!r}: {words[0] if words else 'nothing'} is neither an executable file "
            "nor on PATH; hosts run the hook exactly as written (nothing was changed)"
        )
    return command


def _said(text: str) -> None:
    """A line of ``hook install`` wrapped to the terminal; the settings file it shows (several
    lines of JSON, to paste or compare) exactly as it would be written."""
    if "\n" in text:
        print(text)
        return
    from .readable import INDENT, terminal_width, wrap  # noqa: PLC0415

    for line in wrap(text, terminal_width(), "", INDENT, whole_words=True):
        print(line)


def _hook_url(given: str, host: str) -> str:
    """``--http`` as the host should post to: an http(s) address, ``/hooks/<host>`` added
    unless it is there; no credentials, query or fragment (the file would keep them)."""

    from ..hooks.dispatch import HTTP_PATH  # noqa: PLC0415
    from ..hooks.hosts import http_hosts  # noqa: PLC0415

    if host not in http_hosts():
        raise ConfigError(
            f"--http: {host} runs its hooks as commands only; only {', '.join(http_hosts())} posts them "
            "over HTTP (nothing was changed)"
        )
    parts = urlsplit(given.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--http {given!r}: not an http:// or https:// address (nothing was changed)")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError(
            f"--http {given!r}: no user, password, query or fragment; the token travels in a header "
            "from $ESCALATION_AGENT_TOKEN (nothing was changed)"
        )
    path = parts.path.rstrip("/")
    if not path.endswith(HTTP_PATH + host):
        path += HTTP_PATH + host
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _install_http(args: argparse.Namespace) -> int:
    """``hook install claude-code --http URL``: http handlers; the server keeps store and config."""
    from ..hooks.install import install  # noqa: PLC0415

    options = (
        ("--db", args.db),
        ("--config", args.config),
        ("--prompts", args.prompts),
        ("--command", args.hook_command),
        ("--wake-minutes", args.install_wake_minutes),
    )
    given = [name for name, value in options if value]
    if given:
        raise ConfigError(
            f"--http: {', '.join(given)} cannot apply; the server at the address decides with its own "
            "store, config and prompts (nothing was changed)"
        )
    url = _hook_url(args.http, args.host)
    if url.startswith("http://") and not _loopback(url):
        _said(
            f"note: {url} is plain HTTP: the agent's token would cross the network unencrypted; "
            "use https:// through a TLS proxy (docs/security.md)"
        )
    project = args.project_dir or os.environ.get("CLAUDE_PROJECT_DIR") or Path.cwd()
    return install(
        args.host,
        user=bool(args.user),
        project_dir=Path(project).expanduser(),
        home=Path.home(),
        command="",
        dry_run=bool(args.dry_run),
        out=_said,
        url=url,
    )


def _loopback(url: str) -> bool:

    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def install_hooks(args: argparse.Namespace) -> int:
    """``hook install <host>``: the hook command line with the store and config given here."""
    from ..hooks.install import command_line, install  # noqa: PLC0415

    if args.http is not None:
        return _install_http(args)
    if args.install_wake_minutes is not None and describe(args.host).wake_event is None:
        waking = ", ".join(name for name in NAMES if describe(name).wake_event is not None)
        raise ConfigError(
            f"--wake-minutes: {args.host} has no hook that wakes an idle agent; only {waking} has "
            "(nothing was changed)"
        )
    env = os.environ
    # Validates the config (an explicit path that does not exist is an error) and resolves
    # the store; only what was chosen explicitly is written, by absolute path: the hosts'
    # environment may lack the installer's variables, and their working directory differs.
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts)
    if settings.db_path == ":memory:":
        raise ConfigError("--db: a hook needs a store file that outlives its run, not :memory:")
    store = _store_for_hooks(settings.db_path)
    explicit_db = args.db or env.get("ESCALATION_DB")
    explicit_config = args.config or env.get("ESCALATION_CONFIG")
    explicit_prompts = args.prompts or env.get("ESCALATION_PROMPTS")
    command = command_line(
        _given_command(args.hook_command) if args.hook_command else this_script(),
        db=str(store) if explicit_db else None,
        config=settings.config_path if explicit_config else None,
        prompts=str(Path(explicit_prompts).expanduser().absolute()) if explicit_prompts else None,
    )
    if isinstance(store, Path) and not store.exists():
        _said(f"note: no store at {store} yet; the first hook run or server start creates it")
    project = args.project_dir or env.get("CLAUDE_PROJECT_DIR") or Path.cwd()
    return install(
        args.host,
        user=bool(args.user),
        project_dir=Path(project).expanduser(),
        home=Path.home(),
        command=command,
        dry_run=bool(args.dry_run),
        out=_said,
        wake_minutes=args.install_wake_minutes,
    )


def uninstall_hooks(args: argparse.Namespace) -> int:
    """``hook uninstall <host>``: every handler of ours out of the host's settings file."""
    from ..hooks.install import uninstall  # noqa: PLC0415

    project = args.project_dir or os.environ.get("CLAUDE_PROJECT_DIR") or Path.cwd()
    return uninstall(
        args.host,
        user=bool(args.user),
        project_dir=Path(project).expanduser(),
        home=Path.home(),
        dry_run=bool(args.dry_run),
        out=_said,
    )


def _store_for_hooks(db_path: str) -> Path | str:
    """The store as the hook command line names it: a file by its absolute path, a database
    by its URL, which must not carry a password (the hosts' settings files are not secret)."""

    if not is_database_url(db_path):
        return Path(db_path).absolute()
    if urlsplit(db_path).password is not None:
        raise ConfigError(
            "--db: the URL holds a password, which would be written into the host's settings;"
            " give it in ~/.pgpass or PGPASSWORD instead, or send the hooks over HTTP (--http URL)"
        )
    return db_path
