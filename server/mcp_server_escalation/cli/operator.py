"""Operator commands: escalations, tasks, failures, db. Same services, same store as the tools.

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

from ..errors import EscalationError, StoreError
from ..locations import is_database_url, store_origin
from ..rules.operators.announce import ANSWER_FLAGS
from ..rules.operators.refusals import Door, worded
from ..rules.wording.words import name_words
from ..services import copying, escalation_answers, escalation_lists, escalations, reports, verdicts
from ..services.runtime import Runtime, open_runtime
from ..settings import Settings, default_db_path, resolve_db_path
from . import failure_view, monitor, task_views
from .escalation_view import escalation_lines, reviewed_lines
from .log_lines import report_error
from .readable import store_flag, terminal_width

# The CLI's names for what an operator gives, in its refusals (rules/operators/refusals.py).
FLAG_NAMES = {
    "guidance": "--guidance",
    "override": "--override",
    "terminate": "--terminate",
    "approve": "--approve",
    "new_file_limit": "--file-limit",
    "add_scope": "--add-scope",
}


# The template saying a list is empty, by the status asked for (prompts/operator.toml).
EMPTY_LIST = {
    "pending": "cli_no_escalations_pending",
    "resolved": "cli_no_escalations_resolved",
    "all": "cli_no_escalations",
}


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


async def _escalations(rt: Runtime, args: argparse.Namespace) -> int:
    if args.action == "list":
        return await _list(rt, args)
    if args.action == "show":
        return await _show(rt, args)
    return await _respond(rt, args)


async def _list(rt: Runtime, args: argparse.Namespace) -> int:
    limit = max(1, min(args.limit, 200))
    if args.json:
        _json(await escalation_lists.list_escalations(rt, status=args.status, task_id=args.task, limit=limit))
        return 0
    rows, total = await escalation_lists.review_escalations(
        rt, status=args.status, task_id=args.task, limit=limit
    )
    if not rows:
        _out(rt.prompts.render(EMPTY_LIST[args.status]) + (f" for task {args.task}" if args.task else ""))
        return 0
    width, now = terminal_width(), rt.now()
    for row in rows:
        for line in reviewed_lines(row, width, now):
            _out(line)
    _out(f"({len(rows)} of {total})")
    return 0


async def _show(rt: Runtime, args: argparse.Namespace) -> int:
    shown = await escalations.show_escalation(rt, args.id)
    if args.json:
        _json(shown)
        return 0
    width = terminal_width()
    default = str(default_db_path())
    verdict = await verdicts.verdict_of(rt, args.id)
    store = None if rt.db.path == default else rt.db.path
    for line in escalation_lines(shown, rt.prompts, width, store, verdict):
        _out(line)
    deliveries, newest = await reports.deliveries(rt, args.id), await reports.newest_announcement(rt, args.id)
    for line in monitor.delivery_lines(deliveries, width, shown.status, newest):
        _out(line)
    return 0


async def _respond(rt: Runtime, args: argparse.Namespace) -> int:
    response_type, content = _response(args)
    # The service checks the answer; a refusal reaches the operator in the CLI's words (_main).
    result = await escalation_answers.resolve_escalation(
        rt,
        escalation_id=args.id,
        response_type=response_type,
        content=content,
        new_file_limit=args.file_limit,
        add_scope=args.add_scope,
        responder=_responder(args),
        role="operator",
        verdict=args.verdict.replace("-", "_") if args.verdict else None,
    )
    if args.json:
        _json(result)
    else:
        monitor.say(
            f"escalation {args.id} is now {name_words(result.escalation.status)}; "
            f"task {result.escalation.task_id} is {name_words(result.task_status)}"
        )
    return 0


def cli_door(rt: Runtime) -> Door:
    """The CLI as a door for refusals: answers and fields named by their flags."""
    return Door(name="cli", offers=ANSWER_FLAGS, names=FLAG_NAMES, db=rt.db.path, store=store_flag(rt))


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
        try:
            if (args.command, getattr(args, "action", None)) in _MONITOR_COMMANDS:
                return await monitor.run(rt, args)
            # Every command that opens the store also sends announcements left undelivered.
            return await monitor.with_delivery(rt, _dispatch(rt, args))
        except EscalationError as exc:
            if not exc.refusal:
                raise
            raise EscalationError(worded(rt.prompts, exc, cli_door(rt))) from None


_MONITOR_COMMANDS = {("escalations", "watch"), ("stats", None), ("db", "backup"), ("db", "check")}


async def _dispatch(rt: Runtime, args: argparse.Namespace) -> int:
    if args.command == "escalations":
        return await _escalations(rt, args)
    if args.command == "tasks":
        return await task_views.run(rt, args)
    if args.command == "failures":
        return await failure_view.run(rt, args)
    if args.action == "migrate":
        version = await rt.db.schema_version()
        _out(f"{rt.db.path}: schema version {version}")
        return 0
    return 2


async def _copy(source: str, args: argparse.Namespace) -> int:
    report = await copying.copy_store(source, resolve_db_path(args.target))
    if args.json:
        _out(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0
    tables = ", ".join(f"{name} {count}" for name, count in report.rows.items() if count)
    _out(f"copied {report.source} to {report.target}: {report.total} rows, each table's count checked")
    _out(f"  {tables}")
    return 0


async def _init(settings: Settings, existed: bool) -> int:
    async with open_runtime(settings) as rt:
        version = await rt.db.schema_version()
    _out(f"{rt.db.path}: {'a store already' if existed else 'created'}, schema version {version}")
    return 0


def missing_store(path: str, flag: str | None) -> str | None:
    """Why the operator's commands refuse ``path`` (None when a store is there)."""
    if path == ":memory:" or is_database_url(path) or Path(path).exists():
        return None  # a database's server says itself whether it holds a store (at open)
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
            report_error(problem)
        return 1 if problem else 0
    if args.command == "db" and args.action == "copy":
        source = resolve_db_path(args.source)
        if not (source == ":memory:" or is_database_url(source) or Path(source).exists()):
            raise StoreError(f"SOURCE: no store at {source}; nothing was copied")
        return anyio.run(_copy, source, args)
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts, role="operator")
    problem = missing_store(settings.db_path, args.db)
    if args.command == "db" and args.action == "init":
        return anyio.run(_init, settings, problem is None)
    if problem:
        raise StoreError(problem)
    return anyio.run(_main, settings, args)
