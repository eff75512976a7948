"""What the host hooks need besides the tools' own services: which task an event belongs
to, whether a tool call was already counted, and what holds the task now.

Binding an event to a task (docs/hooks.md), first match wins:

1. ``ESCALATION_TASK`` names the task (created for the project if it does not exist).
2. The most recently updated active or paused task of the event's project: the folder the
   command ran in, then each parent up to the project root (nearest first).
3. The task this host session last recorded an event for, when an operator terminated
   it: a termination holds for the rest of the session instead of starting a fresh task.
4. For events that record or gate something, a new task ``<host>-<session_id>`` (``-2``,
   ``-3``... when that one has ended); reading events (session start, stop, a non-edit
   tool about to run) never create a task.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from datetime import timedelta
from typing import NamedTuple

from ..clock import iso
from ..errors import InvalidInput
from ..models.escalations import Escalation
from ..models.limits import ENDED_STATUSES, TASK_ID_PATTERN
from ..models.results import CheckEditResult, ProgressResult, RecordFailureResult
from ..models.tasks import Task, TestRun
from ..store import escalation_lookups
from ..store import hook_events as hook_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .firing import Fired, Recording, direct, publish_fired
from .runtime import Runtime
from .tasks import project_root, start_task

# Duplicate deliveries arrive within seconds; a month keeps rule 3 working for any session.
RETENTION_DAYS = 30
_UNSAFE = re.compile(r"[^A-Za-z0-9._:@-]+")
_MAX_SUFFIX = 50


class HookState(NamedTuple):
    """The task as a hook decides on it: what holds it and its latest test run."""

    task: Task
    holding: Escalation | None
    latest_test: TestRun | None
    directive: str
    message: str


def project_candidates(root: str, cwd: str | None) -> list[str]:
    """``cwd`` and its parents up to ``root`` (nearest first); just ``root`` if cwd is outside it."""
    root = posixpath.normpath(root)
    if not cwd:
        return [root]
    here = posixpath.normpath(cwd)
    if here != root and not here.startswith(root.rstrip("/") + "/"):
        return [root]
    found = [here]
    while here != root:
        here = posixpath.dirname(here)
        found.append(here)
    return found


def _session_task_id(host: str, session_id: str | None) -> str:
    safe = _UNSAFE.sub("-", session_id or "session").strip("-") or "session"
    return f"{host}-{safe}"[:100]


def _find(
    conn: Conn, host: str, session_id: str | None, candidates: list[str], override: str | None
) -> tuple[Task | None, str | None]:
    """The bound task, or (None, the id a new task would get)."""
    if override is not None:
        return task_store.get(conn, override), override
    for project in candidates:
        live = task_store.latest_active_in_project(conn, project)
        if live is not None:
            return live, None
    if session_id:
        last = hook_store.last_session_task(conn, host, session_id)
        earlier = task_store.get(conn, last) if last else None
        if earlier is not None and earlier.status == "terminated_by_human":
            return earlier, None
    base = _session_task_id(host, session_id)
    for n in range(1, _MAX_SUFFIX + 1):
        candidate = base if n == 1 else f"{base}-{n}"
        existing = task_store.get(conn, candidate)
        if existing is None:
            return None, candidate
        if existing.status not in ENDED_STATUSES:
            return existing, None
    return None, None


async def bind_task(
    rt: Runtime,
    *,
    host: str,
    session_id: str | None,
    root: str,
    cwd: str | None,
    override: str | None,
    create: bool,
) -> Task | None:
    """The task this event belongs to (module docstring); None when there is none to use."""
    if override is not None and not re.match(TASK_ID_PATTERN, override):
        raise InvalidInput(
            "ESCALATION_TASK", f"{override[:80]!r} is not a task id (1-128 of A-Za-z0-9._:/@-)"
        )
    project = project_root(rt, root)
    candidates = project_candidates(project, project_root(rt, cwd) if cwd else None)
    found, new_id = await rt.db.read(lambda conn: _find(conn, host, session_id, candidates, override))
    if found is not None or not create or new_id is None:
        return found
    started = await start_task(
        rt,
        title=rt.prompts.render("hook_task_title", host=host, session_id=session_id or "-"),
        task_id=new_id,
        agent_id=host,
        project=project,
    )
    return started.task


class Delivery(NamedTuple):
    """One delivery of a host event, as its de-duplication claim records it (store/hook_events.py)."""

    host: str
    session_id: str | None
    event: str
    tool_name: str | None
    task_id: str | None
    delivery_key: str | None
    call_base: str | None = None
    call_source: str | None = None


def _claim(rt: Runtime, delivery: Delivery) -> Callable[[Conn], bool]:
    """The claim as a transaction's first step: True when the tool call was not counted before."""
    now = rt.now()
    cutoff = iso(rt.clock() - timedelta(days=RETENTION_DAYS))

    def work(conn: Conn) -> bool:
        hook_store.prune(conn, cutoff)
        return hook_store.claim(conn, **delivery._asdict(), now=now)

    return work


async def claim_event(rt: Runtime, delivery: Delivery) -> bool:
    """Record a delivered event that guards nothing else; True when it was not counted before."""
    return await rt.db.write(_claim(rt, delivery))


class Recorded(NamedTuple):
    """What recording one event's tool call wrote: its failure and its progress."""

    failure: RecordFailureResult | None
    progress: ProgressResult | None


# The claim and the record it guards commit in one transaction, or neither does: a claim
# committed alone would turn every later delivery of an event whose record failed (a killed
# process, a full disk) into a duplicate, and the event would be lost without a word.
async def record_once(
    rt: Runtime,
    delivery: Delivery,
    failure: Recording[RecordFailureResult] | None,
    progress: Recording[ProgressResult] | None,
) -> Recorded | None:
    """Claim the event and record its tool call together; None for a duplicate delivery."""
    claim = _claim(rt, delivery)

    def work(conn: Conn) -> tuple[Recorded, list[Fired | None]] | None:
        if not claim(conn):
            return None
        failed = failure(conn) if failure is not None else None
        reported = progress(conn) if progress is not None else None
        recorded = Recorded(failed[0] if failed else None, reported[0] if reported else None)
        return recorded, [failed[1] if failed else None, reported[1] if reported else None]

    done = await rt.db.write(work)
    if done is None:
        return None
    recorded, fired = done
    for changed in fired:
        await publish_fired(rt, changed)
    return recorded


async def check_once(
    rt: Runtime, delivery: Delivery, check: Recording[CheckEditResult]
) -> CheckEditResult | None:
    """Claim the event and gate its edit together (see ``record_once``); None for a duplicate."""
    claim = _claim(rt, delivery)

    def work(conn: Conn) -> tuple[CheckEditResult, Fired | None] | None:
        return check(conn) if claim(conn) else None

    done = await rt.db.write(work)
    if done is None:
        return None
    await publish_fired(rt, done[1])
    return done[0]


async def permission_escalation(rt: Runtime, task_id: str, key: str) -> Escalation | None:
    """The task's latest escalation about the host's permission request ``key``, or None."""
    return await rt.db.read(lambda conn: escalation_lookups.latest_with_key(conn, task_id, key))


async def hook_state(rt: Runtime, task_id: str) -> HookState:
    """The task, the escalation holding it, its latest test run and its directive."""

    def read(conn: Conn) -> HookState:
        task = task_store.get(conn, task_id)
        if task is None:
            raise InvalidInput("task_id", f"task {task_id!r} vanished")
        holding = escalation_lookups.blocking_open(conn, task_id)
        directed = direct(rt, conn, task)
        return HookState(
            task=task,
            holding=holding,
            latest_test=progress_store.latest_test_run(conn, task_id),
            directive=directed.directive,
            message=directed.message,
        )

    return await rt.db.read(read)
