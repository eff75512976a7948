"""Operator commands: escalations, tasks, db. Same services, same store as the tools.

They open only a store that exists. A mistyped ``--db`` or ``ESCALATION_DB`` used to create
an empty store (folders included) and answer "no pending escalations" while the agents
waited on another one; now it is an error naming the path and how to create a store.
Creating one is explicit (``db init``), or done by the server an agent's host launches.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from ..errors import StoreError
from ..locations import store_origin
from ..models.escalations import Escalation
from ..services import escalations, reports
from ..services.runtime import Runtime, open_runtime
from ..settings import Settings, default_db_path, resolve_db_path
from . import monitor, task_views


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _json(model: BaseModel | list[Any] | dict[str, Any]) -> None:
    data = model.model_dump(mode="json") if isinstance(model, BaseModel) else model
    _out(json.dumps(data, indent=2, sort_keys=True))


def _responder(args: argparse.Namespace) -> str:
    if args.responder:
        return str(args.responder)
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in a bare container
        return "cli"


def print_escalation(e: Escalation, db_path: str | None = None) -> None:
    """The escalation as an operator reads it on a terminal.

    ``db_path``: the store, when it is not the default one, so the printed respond command
    answers this escalation and not one with the same id in another store.
    """
    task = e.context.get("task", {})
    _out(
        f"Escalation {e.escalation_id}  {e.type}  [{e.status}]  priority {e.priority}"
        f"{'  blocking' if e.blocking else ''}"
    )
    _out(f"Task      {e.task_id}: {task.get('title', '')}  (agent {e.agent_id})")
    if task.get("specification"):
        _out(f"Spec      {task['specification']}")
    _out(f"Scope     {', '.join(task.get('scope') or []) or '(any path)'}")
    _out(f"Created   {e.created_at}   updated {e.updated_at}")
    if e.question or e.reason:
        _out(f"Question  {e.question or e.reason}")
        for i, option in enumerate(e.options, 1):
            _out(f"  option {i}: {option}")
    _out("Triggers")
    for t in e.triggers:
        _out(f"  - {t.type}: {t.summary}")
        _out(
            f"    criteria {json.dumps(t.criteria, sort_keys=True)}  observed "
            f"{json.dumps(t.observed, sort_keys=True)}  at {t.at}"
            f"{f'  (fired {t.fired_count}x)' if t.fired_count > 1 else ''}"
        )
    _out("Evidence")
    for name, facts in sorted(e.context.get("evidence", {}).items()):
        _out(f"  [{name}]")
        for line in json.dumps(facts, indent=2, sort_keys=True).splitlines():
            _out(f"    {line}")
    actions = e.context.get("recent_actions", [])
    if actions:
        _out("Recent actions")
        for a in actions[-10:]:
            _out(f"  {a['at']}  {a['kind']}  {json.dumps(a['detail'], sort_keys=True)[:160]}")
    if e.response:
        r = e.response
        _out(f"Response  {r.response_type} by {r.responder} at {r.responded_at}: {r.content}")
        if r.new_file_limit or r.add_scope:
            _out(f"          file limit {r.new_file_limit}  add scope {r.add_scope}")
        _out(f"Delivered {e.delivered_at or '-'}   acknowledged {e.acknowledged_at or '-'}")
    else:
        _out(
            f"Respond with: {', '.join(e.response_options)}  "
            f"(mcp-server-escalation{f' --db {shlex.quote(db_path)}' if db_path else ''} "
            f"escalations respond {e.escalation_id} --guidance TEXT ...)"
        )


async def _escalations(rt: Runtime, args: argparse.Namespace) -> int:
    if args.action == "list":
        result = await escalations.list_escalations(
            rt, status=args.status, task_id=args.task, limit=max(1, min(args.limit, 200))
        )
        if args.json:
            _json(result)
            return 0
        if not result.escalations:
            _out(f"no {args.status} escalations")
            return 0
        _out(f"{'ID':>5}  {'STATUS':<26} {'TYPE':<19} {'PRI':<6} {'TASK':<24} HEADLINE")
        for s in result.escalations:
            _out(
                f"{s.escalation_id:>5}  {s.status:<26} {s.type:<19} {s.priority:<6} "
                f"{s.task_id[:24]:<24} {s.headline[:80]}"
            )
        _out(f"({len(result.escalations)} of {result.total})")
        return 0
    if args.action == "show":
        shown = await escalations.show_escalation(rt, args.id)
        if args.json:
            _json(shown)
        else:
            default = str(default_db_path())
            print_escalation(shown, None if rt.db.path == default else rt.db.path)
            for line in monitor.delivery_lines(await reports.deliveries(rt, args.id)):
                _out(line)
        return 0
    response_type, content = _response(args)
    result_ = await escalations.resolve_escalation(
        rt,
        escalation_id=args.id,
        response_type=response_type,
        content=content,
        new_file_limit=args.file_limit,
        add_scope=args.add_scope,
        responder=_responder(args),
        role="operator",
    )
    if args.json:
        _json(result_)
    else:
        _out(
            f"escalation {args.id} is now {result_.escalation.status}; "
            f"task {result_.escalation.task_id} is {result_.task_status}"
        )
    return 0


def _response(args: argparse.Namespace) -> tuple[str, str]:
    if args.guidance is not None:
        return "guidance", args.guidance
    if args.override is not None:
        return "override", args.override
    if args.terminate is not None:
        return "terminate", args.terminate
    return "approve", ""


async def _main(settings: Settings, args: argparse.Namespace) -> int:
    async with open_runtime(settings, create=False) as rt:
        if (args.command, getattr(args, "action", None)) in _MONITOR_COMMANDS:
            return await monitor.run(rt, args)
        # Every command that opens the store also sends announcements left undelivered.
        return await monitor.with_delivery(rt, _dispatch(rt, args))


_MONITOR_COMMANDS = {("escalations", "watch"), ("stats", None), ("db", "backup"), ("db", "check")}


async def _dispatch(rt: Runtime, args: argparse.Namespace) -> int:
    if args.command == "escalations":
        return await _escalations(rt, args)
    if args.command == "tasks":
        return await task_views.run(rt, args)
    if args.action == "migrate":
        version = await rt.db.schema_version()
        _out(f"{rt.db.path}: schema version {version}")
        return 0
    return 2


async def _init(settings: Settings, existed: bool) -> int:
    async with open_runtime(settings) as rt:
        version = await rt.db.schema_version()
    _out(f"{rt.db.path}: {'a store already' if existed else 'created'}, schema version {version}")
    return 0


def missing_store(path: str, flag: str | None) -> str | None:
    """Why the operator's commands refuse ``path`` (None when a store is there)."""
    if path == ":memory:" or Path(path).exists():
        return None
    origin = store_origin(flag, os.environ)
    if origin == "default":
        given = (
            "the per-user default, which no agent's server has used yet; --db or ESCALATION_DB choose another"
        )
        create = "mcp-server-escalation db init"
    else:
        given = f"given by {origin}"
        create = f"mcp-server-escalation --db {shlex.quote(path)} db init"
    return f"no store at {path} ({given}); nothing was created. Check the path, or create the store: {create}"


def run(args: argparse.Namespace) -> int:
    """Run one operator command."""
    if args.command == "db" and args.action == "path":
        path = resolve_db_path(args.db)
        _out(path)  # printed either way, so that a script sees which path was meant
        problem = missing_store(path, args.db)
        if problem:
            sys.stderr.write(f"error: {problem}\n")
        return 1 if problem else 0
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts, role="operator")
    problem = missing_store(settings.db_path, args.db)
    if args.command == "db" and args.action == "init":
        return anyio.run(_init, settings, problem is None)
    if problem:
        raise StoreError(problem)
    return anyio.run(_main, settings, args)
