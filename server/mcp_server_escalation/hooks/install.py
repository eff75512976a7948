"""``hook install <host>`` and ``hook uninstall <host>``: our hooks in the host's settings file.

Which file, which events (and the tool matcher of each) and its layout are the host's
description (``hosts.py``; ``claude_code.HANDLERS``, ``cursor.HANDLERS``,
``codex.HANDLERS``); this module writes any of them. Existing hooks and every other
setting are kept as they are; an event that already runs our hook command is left alone,
so installing twice changes nothing, and one that runs it with another command line
(another store, config or script) gets the new line, so a later ``--db`` is never silently
ignored. Uninstalling takes out every handler of ours (a group or an event left empty with
it) and nothing else. The file is written whole and atomically (a temporary file renamed
over it), or not at all.

The command line is the script by absolute path with the store, config and prompts the
installer was given (``cli/hook.py``): hosts launch hooks with their own ``PATH`` and
environment, where a bare ``mcp-server-escalation`` or an ``ESCALATION_DB`` of the
installer's shell may not exist.

With ``--wake-minutes N``, a host with a wake event (Claude Code's ``Stop``) also gets the
``asyncRewake`` handler beside ours (``hooks/wake.py``): the same command line with
``--wake-minutes N``, a timeout of N minutes and a little more. It is merged as itself: an
ordinary install keeps its minutes and gives it the new command line, another N replaces
it, and it is never doubled.

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
from .description import HostDescription
from .dispatch import HTTP_PATH
from .hosts import describe

TIMEOUT_SECONDS = 15
# The wake handler waits up to its minutes; the host is given this much more before it ends it.
WAKE_MARGIN_SECONDS = 30
WAKE_OPTION = "--wake-minutes"
# The events whose hook the host ends as it exits: their run leaves the host's process group.
DETACHED = frozenset({"StopFailure"})


def command_line(script: str, *, db: str | None, config: str | None, prompts: str | None) -> str:
    """``script`` (already a shell word or words) with the options the hooks must run with."""
    options = (("--db", db), ("--config", config), ("--prompts", prompts))
    return " ".join([script, *(f"{name} {shlex.quote(value)}" for name, value in options if value)])


def settings_path(host: str, *, user: bool, project_dir: Path, home: Path) -> Path:
    """Where the host reads hooks from, for the project or for the user."""
    base = home if user else project_dir
    folder, name = describe(host).settings_file
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


def _waking(handler: object) -> bool:
    """Is this the ``asyncRewake`` handler (``hook <host> --wake-minutes N``)? It is kept apart
    from the ordinary handler of the same event: each is merged and replaced as itself."""
    return isinstance(handler, dict) and handler.get("asyncRewake") is True


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


# What changed: ("add" | "replace" | "remove", what, for the report).
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


def _hooks(settings: dict[str, Any]) -> dict[str, Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("'hooks' is not an object; fix it by hand first")
    return hooks


def _merge(
    settings: dict[str, Any], host: HostDescription, wanted_of: Callable[[str], dict[str, Any]]
) -> list[Change]:
    """Add our handler of each event ``host`` names (``wanted_of(event)``) to ``settings`` in
    place, in its layout: Claude Code's (event -> matcher groups -> handlers) or flat (event
    -> handlers)."""
    for key, value in host.settings_defaults:
        settings.setdefault(key, value)
    hooks = _hooks(settings)
    grouped = host.layout == "groups"
    changes: list[Change] = []
    for event, matcher in host.handlers:
        wanted = wanted_of(event)
        where = f"{event}{f' [{matcher}]' if matcher else ''}"
        entries = _list(hooks, event, "hooks")
        handlers = [h for g in entries if isinstance(g, dict) for h in _handlers(g)] if grouped else entries
        updated = _update([h for h in handlers if not _waking(h)], host.name, wanted, where)
        if updated is not None:
            changes += updated
            continue
        group = {} if matcher is None else {"matcher": matcher}
        entries.append({**group, "hooks": [dict(wanted)]} if grouped else dict(wanted))
        changes.append(("add", f"{where}: {_shown(wanted)}"))
    return changes


def _command_handler(command: str, host: HostDescription, event: str) -> dict[str, Any]:
    run = f"{command} hook {host.name}"
    typed = {"type": "command"} if host.layout == "groups" else {}
    return {**typed, "command": detached(run) if event in DETACHED else run, "timeout": TIMEOUT_SECONDS}


def detached(run: str) -> str:
    """``run`` in a session of its own, the shell answering at once (``setsid -f``), or as
    itself where ``setsid`` is missing.

    ``claude -p`` exits right after the turn ends on an API error and kills the hook's
    process group with it, 15-50 ms after the event: less than a Python process takes to
    start. ``setsid`` leaves that group within a millisecond or two; the hook it starts reads
    the event from the same stdin and records it (or keeps it in the spool) after the host
    has gone. Its output is no one's: the host reads no answer to this event."""
    return f"setsid -f {run} >/dev/null 2>&1 || {run}"


def merge(host: HostDescription, settings: dict[str, Any], command: str) -> list[Change]:
    """Add our command handler of each event ``host`` names to ``settings`` in place; returns
    what changed."""
    return _merge(settings, host, lambda event: _command_handler(command, host, event))


def wake_handler(command: str, host: str, minutes: float) -> dict[str, Any]:
    """The ``asyncRewake`` handler that waits up to ``minutes`` for an answer (``hooks/wake.py``)."""
    return {
        "type": "command",
        "command": f"{command} hook {host} {WAKE_OPTION} {minutes:g}",
        "asyncRewake": True,
        "timeout": int(minutes * 60) + WAKE_MARGIN_SECONDS,
    }


def merge_wake(host: HostDescription, settings: dict[str, Any], command: str, minutes: float) -> list[Change]:
    """Add (or make current) the wake handler beside our handler of ``host``'s wake event, in
    place; returns what changed. Its timeout follows its minutes, so it is written too."""
    event = host.wake_event
    if event is None:
        raise ConfigError(f"{WAKE_OPTION}: {host.name} has no hook that wakes an idle agent")
    wanted = wake_handler(command, host.name, minutes)
    hooks = _hooks(settings)
    groups = [g for g in _list(hooks, event, "hooks") if isinstance(g, dict)]
    waking = [h for g in groups for h in _handlers(g) if _ours(h, host.name) and _waking(h)]
    changes: list[Change] = []
    for handler in waking:
        if all(handler.get(k) == v for k, v in wanted.items()):
            continue
        changes.append(("replace", f"{event} (wake): {_shown(handler)} with {_shown(wanted)}"))
        handler.update(wanted)
    if waking:
        return changes
    beside = next((g for g in groups if any(_ours(h, host.name) for h in _handlers(g))), None)
    if beside is None:
        beside = {"hooks": []}
        hooks[event].append(beside)
    _list(beside, "hooks", event).append(dict(wanted))
    return [("add", f"{event} (wake): {_shown(wanted)}")]


def _wake_minutes_of(settings: dict[str, Any], host: HostDescription) -> float | None:
    """The minutes of the wake handler of ours already in ``settings``, if there is one."""
    hooks = settings.get("hooks")
    groups = hooks.get(host.wake_event) if isinstance(hooks, dict) and host.wake_event else None
    for group in groups if isinstance(groups, list) else []:
        for handler in _handlers(group) if isinstance(group, dict) else []:
            words = str(handler.get("command", "")).split() if _waking(handler) else []
            if _ours(handler, host.name) and WAKE_OPTION in words[:-1]:
                try:
                    return float(words[words.index(WAKE_OPTION) + 1])
                except ValueError:
                    return None
    return None


def _any(_handler: object) -> bool:
    return True


def remove(settings: dict[str, Any], host: str, which: Callable[[object], bool] = _any) -> list[Change]:
    """Take our handlers of ``host`` (those ``which`` admits) out of ``settings`` in place, in
    either layout; a group or an event left empty by it goes too. Returns what changed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    changes: list[Change] = []
    for event, entries in list(hooks.items()):
        if not isinstance(entries, list):
            continue
        kept: list[Any] = []
        for entry in entries:
            ours = _ours(entry, host) and which(entry)
            if not ours and isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                taken = [h for h in entry["hooks"] if _ours(h, host) and which(h)]
                changes += [("remove", f"{event}: {_shown(h)}") for h in taken]
                entry["hooks"] = [h for h in entry["hooks"] if not any(h is t for t in taken)]
                ours = bool(taken) and not entry["hooks"]
            elif ours:
                changes.append(("remove", f"{event}: {_shown(entry)}"))
            if not ours:
                kept.append(entry)
        if len(kept) != len(entries) and not kept:
            del hooks[event]
        else:
            entries[:] = kept
    if changes and not hooks:
        del settings["hooks"]
    return changes


# The Claude Code plugin (.claude-plugin/plugin.json) names the script bare: a plugin cannot
# know where it was installed, so it must be on the PATH the host starts with (pipx, uv
# tool). Where it is not, each command says so instead of failing silently with 127: at
# session start as a message the user sees (systemMessage), and on every other event on
# stderr with a non-zero exit, which the host reports as a hook error and otherwise ignores.
PLUGIN_SCRIPT = "mcp-server-escalation"
PLUGIN_HOST = "claude-code"


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
    merge(describe(PLUGIN_HOST), settings, PLUGIN_SCRIPT)
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


def merge_http(host: HostDescription, settings: dict[str, Any], url: str) -> list[Change]:
    """Add our hooks posting to ``url`` to ``settings`` in place; returns what changed. The wake
    handler goes: it waits on a store of this machine, which a remote agent's hooks do not use."""
    if not host.http:
        raise ConfigError(f"--http: {host.name} runs its hooks as commands only")
    return _merge(settings, host, lambda _event: http_handler(url)) + remove(settings, host.name, _waking)


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
    wake_minutes: float | None = None,
) -> int:
    """Merge the hooks (commands, or http handlers posting to ``url``; with ``wake_minutes``,
    the wake handler too), write (unless ``dry_run``) and report what changed."""
    described = describe(host)

    def change(data: dict[str, Any]) -> list[Change]:
        if url is not None:
            return merge_http(described, data, url)
        # An ordinary install keeps a wake handler's minutes but gives it the new command line.
        minutes = wake_minutes if wake_minutes is not None else _wake_minutes_of(data, described)
        changes = merge(described, data, command)
        if minutes is not None:
            changes += merge_wake(described, data, command, minutes)
        return changes

    path = settings_path(host, user=user, project_dir=project_dir, home=home)
    return _rewrite(path, change, dry_run, out, f"the {host} hooks are already installed")


def uninstall(
    host: str, *, user: bool, project_dir: Path, home: Path, dry_run: bool, out: Callable[[str], None]
) -> int:
    """Take every handler of ours for ``host`` out of its settings file (the wake handler and
    http ones too), write (unless ``dry_run``) and report what changed."""
    path = settings_path(host, user=user, project_dir=project_dir, home=home)
    unchanged = f"no {host} hooks of ours are installed"
    return _rewrite(path, lambda data: remove(data, host), dry_run, out, unchanged)


def _rewrite(
    path: Path,
    change: Callable[[dict[str, Any]], list[Change]],
    dry_run: bool,
    out: Callable[[str], None],
    unchanged: str,
) -> int:
    """Read the settings file at ``path``, ``change`` it, write it whole (unless ``dry_run``)
    when anything changed, and report each change."""
    data = _load(path)
    try:
        changes = change(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}; nothing was changed") from exc
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    verbs = {"add": "added", "replace": "replaced", "remove": "removed"}
    if not changes:
        out(f"{path}: {unchanged}; nothing to change")
    for action, what in changes:
        out(f"{path}: {f'would {action}' if dry_run else verbs[action]} {what}")
    if dry_run:
        out(text.rstrip("\n"))
    elif changes:
        _write(path, text)
    return 0
