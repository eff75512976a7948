"""Operator commands: escalations, tasks, db. Same services, same store as the tools."""

from __future__ import annotations

import argparse
import getpass
import json
import shlex
import sys
from typing import Any

import anyio
from pydantic import BaseModel

from ..models.escalations import Escalation
from ..rules.announce import HEADLINE_CHARS
from ..rules.salient import headline, one_line
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
        _out(f"  - {t.type}: {headline(t.summary, HEADLINE_CHARS)}")
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
                f"{s.task_id[:24]:<24} {one_line(s.headline, 80)}"
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


async def _main(args: argparse.Namespace) -> int:
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts, role="operator")
    async with open_runtime(settings) as rt:
        if (args.command, getattr(args, "action", None)) in _MONITOR_COMMANDS:
            return await monitor.run(rt, args)
        # Every command that opens the store also sends announcements left undelivered.
        return await monitor.with_delivery(rt, _dispatch(rt, args))


_MONITOR_COMMANDS = {("escalations", "watch"), ("stats", None), ("db", "backup")}


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


def run(args: argparse.Namespace) -> int:
    """Run one operator command."""
    if args.command == "db" and args.action == "path":
        _out(resolve_db_path(args.db))
        return 0
    return anyio.run(_main, args)
