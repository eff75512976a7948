"""``hook install claude-code|cursor``: merge our hooks into the host's settings file.

Existing hooks and every other setting are kept as they are; an event that already runs
our hook command is left alone, so installing twice changes nothing. The file is written
whole and atomically (a temporary file renamed over it), or not at all.

Claude Code (``.claude/settings.json`` or ``~/.claude/settings.json``): ``PreToolUse`` on
every tool (the pause must be able to hold any tool, not only edits), ``PostToolUse`` on
the edit and shell tools (nothing else is recorded), ``PostToolUseFailure`` on every tool,
``Stop`` and ``SessionStart``. Cursor (``.cursor/hooks.json`` or ``~/.cursor/hooks.json``):
``preToolUse``, ``postToolUse``, ``postToolUseFailure``, ``stop``, ``sessionStart``;
``postToolUse`` carries the exit code that ``afterShellExecution`` lacks.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError

TIMEOUT_SECONDS = 15
CLAUDE_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PreToolUse", "*"),
    ("PostToolUse", "Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell"),
    ("PostToolUseFailure", "*"),
    ("Stop", None),
    ("SessionStart", None),
)
CURSOR_EVENTS: tuple[str, ...] = ("preToolUse", "postToolUse", "postToolUseFailure", "stop", "sessionStart")


def settings_path(host: str, *, user: bool, project_dir: Path, home: Path) -> Path:
    """Where the host reads hooks from, for the project or for the user."""
    base = home if user else project_dir
    if host == "claude-code":
        return base / ".claude" / "settings.json"
    return base / ".cursor" / "hooks.json"


def _ours(handler: object, host: str) -> bool:
    return isinstance(handler, dict) and f"hook {host}" in str(handler.get("command", ""))


def _handlers(group: dict[str, Any]) -> list[Any]:
    found = group.get("hooks")
    return found if isinstance(found, list) else []


def _list(container: dict[str, Any], key: str, where: str) -> list[Any]:
    value = container.setdefault(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key!r} is not a list; fix it by hand first")
    return value


def merge_claude(settings: dict[str, Any], command: str) -> list[str]:
    """Add our Claude Code hooks to ``settings`` in place; returns what changed."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("'hooks' is not an object; fix it by hand first")
    line = f"{command} hook claude-code"
    changes: list[str] = []
    for event, matcher in CLAUDE_EVENTS:
        groups = _list(hooks, event, "hooks")
        handlers = [h for g in groups if isinstance(g, dict) for h in _handlers(g)]
        if any(_ours(h, "claude-code") for h in handlers):
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": line, "timeout": TIMEOUT_SECONDS}]
        groups.append(group)
        changes.append(f"{event}{f' [{matcher}]' if matcher else ''}: {line}")
    return changes


def merge_cursor(config: dict[str, Any], command: str) -> list[str]:
    """Add our Cursor hooks to ``config`` in place; returns what changed."""
    config.setdefault("version", 1)
    hooks = config.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("'hooks' is not an object; fix it by hand first")
    line = f"{command} hook cursor"
    changes: list[str] = []
    for event in CURSOR_EVENTS:
        handlers = _list(hooks, event, "hooks")
        if any(_ours(h, "cursor") for h in handlers):
            continue
        handlers.append({"command": line, "timeout": TIMEOUT_SECONDS})
        changes.append(f"{event}: {line}")
    return changes


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
) -> int:
    """Merge the hooks, write (unless ``dry_run``) and report what changed."""
    path = settings_path(host, user=user, project_dir=project_dir, home=home)
    data = _load(path)
    try:
        changes = merge_claude(data, command) if host == "claude-code" else merge_cursor(data, command)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}; nothing was changed") from exc
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    verb = "would add" if dry_run else "added"
    if not changes:
        out(f"{path}: the {host} hooks are already installed; nothing to change")
    for change in changes:
        out(f"{path}: {verb} {change}")
    if dry_run:
        out(text.rstrip("\n"))
    elif changes:
        _write(path, text)
    return 0
