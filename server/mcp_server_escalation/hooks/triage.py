"""What is known about an event before the store, and whether the store is needed (pure).

Most hook events are reads: ``Read``, ``Grep``, ``Glob`` about to run, a read-only shell
command finishing. Their answer never depends on the store (they are let through even
during a pause and never recorded), so the hook answers them without opening it, loading
the services or starting an event loop.

``triage`` works out the event's tool kind, project root and (for a finished tool call) its
plan once; the same ``Triaged`` value decides whether the store is needed and is what the
runner answers from, so the two can never see the event differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ..models.hook_config import HooksConfig
from ..rules.bounds.token_scope import Scope
from ..rules.reading.commands import DEFAULT_TEST_COMMAND, is_read_only_command
from .events import HookEvent, ToolKind, tool_kind
from .hosts import describe
from .plan import PostPlan, Rules, plan_post, usable_path


def project_dir(event: HookEvent, env: Mapping[str, str], cwd: str | None = None) -> str:
    """The project root: the first usable of the places the event's host names (its
    variable, its workspace root, the event's cwd), else the hook process's working
    directory (``cwd``, when the relay answers for it)."""
    for candidate in describe(event.host).project_candidates(event, env):
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


class Triaged(NamedTuple):
    """One event with what is worked out about it before the store, once per event."""

    event: HookEvent
    kind: ToolKind | None
    root: str
    override: str | None  # the task named by ESCALATION_TASK, if any
    plan: PostPlan | None  # what a finished tool call records; None for other events
    # What the token that posted the event over HTTP may see (None: anything); what the
    # event's answer quotes of other tasks' records keeps to it.
    within: Scope | None = None


def triage(event: HookEvent, cfg: HooksConfig, env: Mapping[str, str], cwd: str | None = None) -> Triaged:
    """The event's kind, root and plan, from the hook process's ``env`` and ``cwd``."""
    kind = kind_of(event, cfg)
    root = project_dir(event, env, cwd)
    finished = event.kind in ("post_tool", "post_tool_failure")
    return Triaged(
        event=event,
        kind=kind,
        root=root,
        override=env.get("ESCALATION_TASK") or None,
        plan=plan_post(event, kind, root, rules(cfg)) if finished else None,
    )


def exempt(triaged: Triaged, cfg: HooksConfig) -> bool:
    """Let through even during a pause: reading, and this server's own tools."""
    if triaged.kind in ("own", "read"):
        return True
    command = triaged.event.command or ""
    return triaged.kind == "shell" and is_read_only_command(command, cfg.read_only_commands)


def needs_store(triaged: Triaged, cfg: HooksConfig) -> bool:
    """False when the answer is "no decision" whatever the store holds."""
    event, plan = triaged.event, triaged.plan
    if event.kind == "pre_tool":
        return not exempt(triaged, cfg)
    if plan is not None:
        return plan.failure is not None or plan.progress is not None
    if event.kind == "stop":
        return cfg.stop and not event.stop_hook_active and event.loop_count <= 0
    if event.kind == "session_start":
        return cfg.session_context
    if event.kind == "permission_request":
        return cfg.permission_requests == "ask"
    return event.kind == "stop_failure"  # an API error is always recorded
