"""A human answers an escalation: the checks an answer passes before anything is written.

Who may answer (an agent only withdraws its own task's question), whether the escalation
can still be answered as the human saw it, and whether the answer is one it offers with
what that kind of answer needs. Each refusal names the field and says how to fix the call;
nothing is stored when one is raised.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import Conflict, Forbidden, InvalidInput
from ..models.escalations import Escalation
from ..models.limits import FILE_LIMIT_MAX, LIST_MAX, PATH_MAX, TEXT_MAX
from ..store.sql import Conn
from .tasks import load_task


def check_answerable(escalation: Escalation, expected_revision: int | None) -> None:
    """Only a pending escalation is answered, and only as the human saw it."""
    escalation_id = escalation.escalation_id
    if escalation.status != "pending":
        raise Conflict(
            f"escalation_id: escalation {escalation_id} is already {escalation.status}; "
            "only a pending escalation can be answered."
        ).because(
            "answered" if escalation.response is not None else "closed",
            escalation_id=escalation_id,
            status=escalation.status,
            task_id=escalation.task_id,
        )
    if expected_revision is not None and expected_revision != escalation.revision:
        raise Conflict(
            f"revision: escalation {escalation_id} changed since revision {expected_revision} "
            f"(it is at revision {escalation.revision}); read it again before answering."
        ).because("changed", escalation_id=escalation_id, seen=expected_revision, current=escalation.revision)


def check_answer(
    escalation: Escalation,
    response_type: str,
    content: str,
    new_file_limit: int | None,
    add_scope: list[str],
) -> None:
    """The answer is one this escalation offers, with what that kind of answer needs."""
    if response_type not in escalation.response_options:
        raise InvalidInput(
            "response_type",
            f"{response_type!r} is not an option for this {escalation.type} escalation; "
            f"choose one of {escalation.response_options}",
        ).because(
            "not_an_answer",
            escalation_id=escalation.escalation_id,
            type=escalation.type,
            response_type=response_type,
            options=tuple(escalation.response_options),
        )
    if response_type in ("guidance", "override") and not content.strip():
        raise InvalidInput(
            "content", f"a {response_type} response needs text (1 to {TEXT_MAX} characters)"
        ).because("needs_text", response_type=response_type)
    if response_type != "approve" and (new_file_limit is not None or add_scope):
        raise InvalidInput(
            "new_file_limit",
            "new_file_limit and add_scope go only with response_type 'approve'",
        ).because("approve_only", response_type=response_type)


def check_approval_values(new_file_limit: int | None, add_scope: list[str]) -> None:
    """The tool's schema bounds for an approval, for the doors without one (the console's form)."""
    if new_file_limit is not None and not 1 <= new_file_limit <= FILE_LIMIT_MAX:
        raise InvalidInput(
            "new_file_limit", f"{new_file_limit} is not between 1 and {FILE_LIMIT_MAX}"
        ).because("file_limit_range", limit=new_file_limit, high=FILE_LIMIT_MAX)
    longest = max((len(glob) for glob in add_scope), default=0)
    if len(add_scope) > LIST_MAX or longest > PATH_MAX:
        raise InvalidInput(
            "add_scope", f"at most {LIST_MAX} globs of at most {PATH_MAX} characters each"
        ).because("scope_too_large", count=len(add_scope), longest=longest, globs=LIST_MAX, chars=PATH_MAX)


def check_agent_may_withdraw(
    conn: Conn,
    escalation: Escalation,
    response_type: str,
    held: Mapping[str, int] | None,
    agent_id: str | None,
) -> None:
    """An agent may only withdraw an ask_human question of a task it holds or whose agent it names."""
    if not (response_type == "withdraw" and escalation.type == "ask_human"):
        raise Forbidden(
            f"response_type: this server runs in the agent role, which may only withdraw "
            f"its own ask_human question; {response_type!r} on a {escalation.type} "
            "escalation must come from a human operator (the CLI "
            "'mcp-server-escalation escalations respond' or a server started with --role operator)."
        )
    task = load_task(conn, escalation.task_id)
    # The agent named is the one start_task gave the task to: as much as the connection
    # proves (any caller may call start_task with that agent_id and so hold it).
    if agent_id is not None and agent_id == task.agent_id:
        return
    if held is not None and held.get(task.task_id) == task.generation:
        return
    how = (
        "this request came without an MCP session (sessionless HTTP), so it holds no task by its connection"
        if held is None
        else "this connection does not hold it (no start_task for it on this connection)"
    )
    raise Forbidden(
        f"escalation_id: escalation {escalation.escalation_id} is a question of task "
        f"{task.task_id!r}, and {how}: an agent withdraws only questions of a task it started, "
        "resumed or took over with start_task, on the same connection or naming the same "
        f"agent_id. If it is your task, call resolve_escalation again with agent_id set to the "
        f"agent_id you gave start_task, or call start_task(task_id={task.task_id!r}) first; "
        "otherwise a human operator answers it ('mcp-server-escalation escalations respond')."
    )
