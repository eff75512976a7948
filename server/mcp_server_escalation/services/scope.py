"""Whether a tool call stays within its token's scope (``rules/bounds/token_scope.py``).

Over HTTP a person's token may carry a scope: the projects and task prefixes its holder may
report on. A tool call names its task directly (``task_id``) or through what belongs to one
(an escalation, a failure record); the task's prefix and its stored project must both be
within the scope, so a scoped token can neither report on, pause, answer, nor read another
agent's task through any tool or resource, as through the hook route. What reads across tasks
(a list of escalations, a project's failure records) keeps only the tasks the scope admits
(``Scope.admits``, the same check). A refusal is worded from the prompt book, as the hook
route's is (``rules/wording/scope_refusals.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from contextlib import suppress
from typing import Any

from ..errors import Forbidden
from ..rules.bounds.token_scope import Scope, ScopeRefusal
from ..rules.wording.scope_refusals import scope_refusal_words
from ..store import escalation_lookups
from ..store import failures as failure_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .runtime import Runtime
from .tasks import project_root

# The arguments that name an escalation or a failure record, which belong to one task each.
ESCALATION_ARGUMENTS = ("escalation_id", "follow_up_of")
FAILURE_ARGUMENTS = ("failure_id", "superseded_by")
# Where a tool call names its task, in a refusal for want of one.
TASK_FIELD = "task_id"


async def refuse_outside(rt: Runtime, scope: Scope, tool: str, arguments: Mapping[str, Any]) -> None:
    """Raise ``Forbidden`` when the call ``tool(**arguments)`` reaches a task outside ``scope``."""
    if tool == "start_task":
        # A new task's id and project are the call's own (the server's folder by default).
        refusal = scope.task_refusal(arguments.get("task_id"))
        refusal = refusal or scope.project_refusal(project_root(rt, arguments.get("project")))
        if refusal:
            raise Forbidden(scope_refusal_words(rt.prompts, refusal, TASK_FIELD))
    if "task_id" not in arguments and not _names_a_task(arguments):
        return  # a call across tasks (list_escalations without a task) lists only the scope's
    refusal = await rt.db.read(lambda conn: _refusal(conn, scope, arguments))
    if refusal:
        raise Forbidden(scope_refusal_words(rt.prompts, refusal, TASK_FIELD))


async def projects_of(rt: Runtime, tasks: Collection[str]) -> dict[str, str | None]:
    """Each task's stored project (None: no such task), for a scoped list of changes."""
    return await rt.db.read(lambda conn: {task: task_store.project_of(conn, task) for task in sorted(tasks)})


def _names_a_task(arguments: Mapping[str, Any]) -> bool:
    return any(arguments.get(name) is not None for name in (*ESCALATION_ARGUMENTS, *FAILURE_ARGUMENTS))


def _refusal(conn: Conn, scope: Scope, arguments: Mapping[str, Any]) -> ScopeRefusal | None:
    """Why a task the arguments name is outside ``scope``, or None (a name that names nothing
    is left to the tool, which says so as for anyone)."""
    tasks = [arguments["task_id"]] if arguments.get("task_id") is not None else []
    for name in ESCALATION_ARGUMENTS:
        if isinstance(arguments.get(name), int):
            with suppress(LookupError):  # no such escalation: the tool says so
                tasks.append(escalation_lookups.task_of(conn, arguments[name]))
    for name in FAILURE_ARGUMENTS:
        value = arguments.get(name)
        seq = failure_store.parse_failure_id(value) if isinstance(value, str) else None
        record = failure_store.get(conn, seq) if seq is not None else None
        if record is not None:
            tasks.append(record.task_id)
    for task in tasks:
        refusal = scope.refusal(task, task_store.project_of(conn, task))
        if refusal:
            return refusal
    return None
