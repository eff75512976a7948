"""``hook install claude-code|cursor|codex``: merge our hooks into the host's settings file.

Existing hooks and every other setting are kept as they are; an event that already runs
our hook command is left alone, so installing twice changes nothing, and one that runs it
with another command line (another store, config or script) gets the new line, so a later
``--db`` is never silently ignored. The file is written whole and atomically (a temporary
file renamed over it), or not at all.

The command line is the script by absolute path with the store, config and prompts the
installer was given (``cli/hook.py``): hosts launch hooks with their own ``PATH`` and
environment, where a bare ``mcp-server-escalation`` or an ``ESCALATION_DB`` of the
installer's shell may not exist.

Claude Code (``.claude/settings.json`` or ``~/.claude/settings.json``): ``PreToolUse`` on
every tool (the pause must be able to hold any tool, not only edits), ``PostToolUse`` on
the edit and shell tools (nothing else is recorded), ``PostToolUseFailure`` and
``PermissionRequest`` on every tool (the latter says nothing unless ``[hooks]
permission_requests = "ask"``), ``Stop``, ``StopFailure`` (the turn ended on an API error)
and ``SessionStart``.

Cursor (``.cursor/hooks.json`` or ``~/.cursor/hooks.json``): ``preToolUse``,
``postToolUse``, ``postToolUseFailure``, ``stop``, ``sessionStart``; ``postToolUse``
carries the exit code that ``afterShellExecution`` lacks.

Codex (``.codex/hooks.json`` or ``~/.codex/hooks.json``, Claude Code's layout; Codex also
reads ``[hooks]`` tables of ``config.toml``, which this installer leaves alone):
``PreToolUse`` and ``PermissionRequest`` on every tool, ``PostToolUse`` on ``Bash`` and
``apply_patch`` (Codex has no ``PostToolUseFailure``: a failed call reaches
``PostToolUse``), ``Stop`` and ``SessionStart``.

A remote agent's Claude Code (``--http URL``) gets the same events as ``http`` handlers
that post to a ``serve --transport http`` elsewhere (``adapters/http/hooks.py``), with the
agent's token and task taken from its environment through ``allowedEnvVars``: the
settings file never holds a secret. Our command handlers become http handlers and back,
so switching a machine from local to remote hooks leaves no event answered twice.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .dispatch import HTTP_PATH

TIMEOUT_SECONDS = 15
CLAUDE_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PreToolUse", "*"),
    ("PostToolUse", "Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell"),
    ("PostToolUseFailure", "*"),
    ("PermissionRequest", "*"),
    ("Stop", None),
    ("StopFailure", None),
    ("SessionStart", None),
)
CURSOR_EVENTS: tuple[str, ...] = ("preToolUse", "postToolUse", "postToolUseFailure", "stop", "sessionStart")
CODEX_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PreToolUse", "*"),
    ("PermissionRequest", "*"),
    ("PostToolUse", "Bash|apply_patch"),
    ("Stop", None),
    ("SessionStart", None),
)
# The events whose hook the host ends as it exits: their run leaves the host's process group.
DETACHED = frozenset({"StopFailure"})
# Where each host reads its hooks, under the project or the home folder.
SETTINGS_FILES = {
    "claude-code": (".claude", "settings.json"),
    "cursor": (".cursor", "hooks.json"),
    "codex": (".codex", "hooks.json"),
}


def command_line(script: str, *, db: str | None, config: str | None, prompts: str | None) -> str:
    """``script`` (already a shell word or words) with the options the hooks must run with."""
    options = (("--db", db), ("--config", config), ("--prompts", prompts))
    return " ".join([script, *(f"{name} {shlex.quote(value)}" for name, value in options if value)])


def settings_path(host: str, *, user: bool, project_dir: Path, home: Path) -> Path:
    """Where the host reads hooks from, for the project or for the user."""
    base = home if user else project_dir
    folder, name = SETTINGS_FILES[host]
    return base / folder / name


def http_handler(url: str) -> dict[str, Any]:
    """Claude Code's ``http`` handler posting to ``url`` with the agent's token and task."""
    return {
        "type": "http",
        "url": url,
        "headers": {
            "Authorization": "Bearer $ESCALATION_AGENT_TOKEN",
            "X-Escalation-Task": "$ESCALATION_TASK",
        },
        "allowedEnvVars": ["ESCALATION_AGENT_TOKEN", "ESCALATION_TASK"],
        "timeout": TIMEOUT_SECONDS,
    }


def _ours(handler: object, host: str) -> bool:
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "http":
        path = urlsplit(str(handler.get("url", ""))).path.rstrip("/")
        return path.endswith(HTTP_PATH + host)
    return f"hook {host}" in str(handler.get("command", ""))


def _shown(handler: dict[str, Any]) -> str:
    """A handler as the report names it: its command line or its URL."""
    return str(handler.get("command") or handler.get("url"))


def _handlers(group: dict[str, Any]) -> list[Any]:
    found = group.get("hooks")
    return found if isinstance(found, list) else []


def _list(container: dict[str, Any], key: str, where: str) -> list[Any]:
    value = container.setdefault(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key!r} is not a list; fix it by hand first")
    return value


# What changed: ("add" | "replace", what, for the report).
Change = tuple[str, str]


# What only a command handler or only an http one has: switching kinds drops the other's.
_COMMAND_KEYS = ("command", "args", "shell")
_HTTP_KEYS = ("url", "headers", "allowedEnvVars")


def _update(handlers: list[Any], host: str, wanted: dict[str, Any], where: str) -> list[Change] | None:
    """Make our handlers among ``handlers`` the ``wanted`` one (a timeout set by hand stays);
    None when there are none."""
    ours = [h for h in handlers if _ours(h, host)]
    if not ours:
        return None
    changes: list[Change] = []
    fields = {k: v for k, v in wanted.items() if k != "timeout"}
    for handler in ours:
        stale = [k for k in (_COMMAND_KEYS if "url" in wanted else _HTTP_KEYS) if k in handler]
        if not stale and all(handler.get(k) == v for k, v in fields.items()):
            continue
        changes.append(("replace", f"{where}: {_shown(handler)} with {_shown(wanted)}"))
        for key in stale:
            del handler[key]
        handler.update(fields)
    return changes


def _merge_groups(
    settings: dict[str, Any],
    handler: Callable[[str], dict[str, Any]],
    host: str,
    events: tuple[tuple[str, str | None], ...],
) -> list[Change]:
    """Add our handler of each event (``handler(event)``) in Claude Code's layout (event ->
    matcher groups -> handlers) in place."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("'hooks' is not an object; fix it by hand first")
    changes: list[Change] = []
    for event, matcher in events:
        wanted = handler(event)
        where = f"{event}{f' [{matcher}]' if matcher else ''}"
        groups = _list(hooks, event, "hooks")
        handlers = [h for g in groups if isinstance(g, dict) for h in _handlers(g)]
        updated = _update(handlers, host, wanted, where)
        if updated is not None:
            changes += updated
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [dict(wanted)]
        groups.append(group)
        changes.append(("add", f"{where}: {_shown(wanted)}"))
    return changes


def _command_handler(command: str, host: str, event: str) -> dict[str, Any]:
    run = f"{command} hook {host}"
    return {
        "type": "command",
        "command": detached(run) if event in DETACHED else run,
        "timeout": TIMEOUT_SECONDS,
    }


def detached(run: str) -> str:
    """``run`` in a session of its own, the shell answering at once (``setsid -f``), or as
    itself where ``setsid`` is missing.

    ``claude -p`` exits right after the turn ends on an API error and kills the hook's
    process group with it, 15-50 ms after the event: less than a Python process takes to
    start. ``setsid`` leaves that group within a millisecond or two; the hook it starts reads
    the event from the same stdin and records it (or keeps it in the spool) after the host
    has gone. Its output is no one's: the host reads no answer to this event."""
    return f"setsid -f {run} >/dev/null 2>&1 || {run}"


def merge_claude(settings: dict[str, Any], command: str) -> list[Change]:
    """Add our Claude Code hooks to ``settings`` in place; returns what changed."""
    return _merge_groups(
        settings, lambda event: _command_handler(command, "claude-code", event), "claude-code", CLAUDE_EVENTS
    )


# The Claude Code plugin (.claude-plugin/plugin.json) names the script bare: a plugin cannot
# know where it was installed, so it must be on the PATH the host starts with (pipx, uv
# tool). Where it is not, each command says so instead of failing silently with 127: at
# session start as a message the user sees (systemMessage), and on every other event on
# stderr with a non-zero exit, which the host reports as a hook error and otherwise ignores.
PLUGIN_SCRIPT = "mcp-server-escalation"


def plugin_guarded(run: str, event: str, missing: str) -> str:
    """``run`` preceded by the check that the plugin's script is on ``PATH`` (above);
    ``missing``: what the user reads when it is not (``plugin_script_missing``)."""
    if event == "SessionStart":
        said = shlex.quote(json.dumps({"systemMessage": missing}))
        otherwise = f"{{ printf '%s\\n' {said}; exit 0; }}"
    else:
        otherwise = f"{{ echo {shlex.quote(missing)} >&2; exit 1; }}"
    return f"command -v {PLUGIN_SCRIPT} >/dev/null 2>&1 || {otherwise}; {run}"


def plugin_hooks(missing: str) -> dict[str, Any]:
    """The hooks of the Claude Code plugin: the installer's, with the script bare and guarded."""
    settings: dict[str, Any] = {}
    merge_claude(settings, PLUGIN_SCRIPT)
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = plugin_guarded(handler["command"], event, missing)
    hooks: dict[str, Any] = settings["hooks"]
    return hooks


def plugin_server(missing: str) -> dict[str, Any]:
    """The plugin's MCP server: the script, or the reason it cannot start on stderr (which
    the host keeps in its MCP log) and a failed connection that ``/mcp`` shows."""
    missing = f"{{ echo {shlex.quote(missing)} >&2; exit 127; }}"
    check = f"command -v {PLUGIN_SCRIPT} >/dev/null 2>&1 || {missing}; exec {PLUGIN_SCRIPT}"
    return {"command": "sh", "args": ["-c", check]}


def merge_claude_http(settings: dict[str, Any], url: str) -> list[Change]:
    """Add our Claude Code hooks posting to ``url`` to ``settings`` in place; returns what changed."""
    return _merge_groups(settings, lambda _event: http_handler(url), "claude-code", CLAUDE_EVENTS)


def merge_codex(config: dict[str, Any], command: str) -> list[Change]:
    """Add our Codex hooks to ``config`` (a ``hooks.json``) in place; returns what changed."""
    return _merge_groups(
        config, lambda event: _command_handler(command, "codex", event), "codex", CODEX_EVENTS
    )


def merge_cursor(config: dict[str, Any], command: str) -> list[Change]:
    """Add our Cursor hooks to ``config`` in place; returns what changed."""
    config.setdefault("version", 1)
    hooks = config.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("'hooks' is not an object; fix it by hand first")
    wanted = {"command": f"{command} hook cursor", "timeout": TIMEOUT_SECONDS}
    changes: list[Change] = []
    for event in CURSOR_EVENTS:
        handlers = _list(hooks, event, "hooks")
        updated = _update(handlers, "cursor", wanted, event)
        if updated is not None:
            changes += updated
            continue
        handlers.append(dict(wanted))
        changes.append(("add", f"{event}: {_shown(wanted)}"))
    return changes


MERGES: dict[str, Callable[[dict[str, Any], str], list[Change]]] = {
    "claude-code": merge_claude,
    "cursor": merge_cursor,
    "codex": merge_codex,
}
# The hosts that can post their hooks over HTTP, and how: the installer's ``--http``.
HTTP_MERGES: dict[str, Callable[[dict[str, Any], str], list[Change]]] = {"claude-code": merge_claude_http}


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON ({exc}); nothing was changed") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level is not an object; nothing was changed")
    return data


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def install(
    host: str,
    *,
    user: bool,
    project_dir: Path,
    home: Path,
    command: str,
    dry_run: bool,
    out: Callable[[str], None],
    url: str | None = None,
) -> int:
    """Merge the hooks (commands, or http handlers posting to ``url``), write (unless
    ``dry_run``) and report what changed."""
    path = settings_path(host, user=user, project_dir=project_dir, home=home)
    data = _load(path)
    try:
        changes = HTTP_MERGES[host](data, url) if url is not None else MERGES[host](data, command)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}; nothing was changed") from exc
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    verbs = {"add": "added", "replace": "replaced"}
    if not changes:
        out(f"{path}: the {host} hooks are already installed; nothing to change")
    for action, what in changes:
        out(f"{path}: {f'would {action}' if dry_run else verbs[action]} {what}")
    if dry_run:
        out(text.rstrip("\n"))
    elif changes:
        _write(path, text)
    return 0
