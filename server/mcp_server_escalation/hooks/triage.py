"""Which events can be answered without the store (pure, no I/O).

Most hook events are reads: ``Read``, ``Grep``, ``Glob`` about to run, a read-only shell
command finishing. Their answer never depends on the store (they are let through even
during a pause and never recorded), so the hook answers them without opening it, loading
the services or starting an event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..models.hook_config import HooksConfig
from ..rules.commands import DEFAULT_TEST_COMMAND, is_read_only_command
from .events import HookEvent, ToolKind, tool_kind
from .plan import Rules, plan_post, usable_path


def project_dir(event: HookEvent, env: Mapping[str, str], cwd: str | None = None) -> str:
    """The project root: the host's variable, else its workspace root, else the event's cwd,
    else the hook process's working directory (``cwd``, when the relay answers for it)."""
    claude, cursor = env.get("CLAUDE_PROJECT_DIR"), env.get("CURSOR_PROJECT_DIR")
    first_root = event.roots[0] if event.roots else None
    order = (cursor, first_root, claude, event.cwd) if event.host == "cursor" else (claude, event.cwd)
    for candidate in order:
        if usable_path(candidate):
            return str(candidate)
    return cwd or str(Path.cwd())


def rules(cfg: HooksConfig) -> Rules:
    """The plan's rules from the ``[hooks]`` table."""
    return Rules(
        test_command=cfg.test_command or DEFAULT_TEST_COMMAND,
        read_only_commands=tuple(cfg.read_only_commands),
        attempts=frozenset(cfg.attempts),
        outside_project=cfg.outside_project,
    )


def kind_of(event: HookEvent, cfg: HooksConfig) -> ToolKind | None:
    """The event's tool, classified with the configured extra read-only tools."""
    return tool_kind(event.tool_name, servers=cfg.mcp_servers, read_only=cfg.read_only_tools)


def exempt(event: HookEvent, cfg: HooksConfig) -> bool:
    """Let through even during a pause: reading, and this server's own tools."""
    kind = kind_of(event, cfg)
    if kind in ("own", "read"):
        return True
    return kind == "shell" and is_read_only_command(event.command or "", cfg.read_only_commands)


def needs_store(event: HookEvent, cfg: HooksConfig, root: str) -> bool:
    """False when the answer is "no decision" whatever the store holds."""
    if event.kind == "pre_tool":
        return not exempt(event, cfg)
    if event.kind in ("post_tool", "post_tool_failure"):
        plan = plan_post(event, kind_of(event, cfg), root, rules(cfg))
        return plan.failure is not None or plan.progress is not None
    if event.kind == "stop":
        return cfg.stop and not event.stop_hook_active and event.loop_count <= 0
    if event.kind == "session_start":
        return cfg.session_context
    if event.kind == "permission_request":
        return cfg.permission_requests == "ask"
    return event.kind == "stop_failure"  # an API error is always recorded
