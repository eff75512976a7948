"""A host's permission request as an approval escalation (``[hooks] permission_requests``).

Claude Code and Codex run ``PermissionRequest`` when they are about to ask the user whether
a tool call may run. By default (``"ignore"``) the hook has no say and the user answers in
the host as before. With ``"ask"`` the operator answers instead, through the product's own
question: an ``ask_human`` escalation (blocking, so the task pauses while it waits), keyed
by the request (the tool's name and input), so the same request asked again finds it:

- no escalation yet: raise it, and refuse the request with a reason that tells the model
  to wait and ask again once it is approved (a pause's answer);
- pending: refuse it the same way;
- approved: allow it (the host skips its own dialog); an approval holds for that request
  whenever it is asked again;
- answered otherwise (guidance, override, terminate): refuse it with the operator's words,
  acknowledged on delivery like any answer (a termination also stops the agent); once that
  answer is delivered, asking again is a new question to the operator.

While another escalation holds the task, a permission request is refused as the pause
refuses any tool call, and no second question is raised.
"""

from __future__ import annotations

from ..models.escalations import Escalation
from ..models.limits import ENDED_STATUSES
from ..models.tasks import Task
from ..services import escalation_delivery, escalation_raising
from ..services import hooks as hook_service
from .events import Answer
from .runner import Call, answered

REQUEST_CHARS = 500  # how much of a command or a patch's file list the operator's question shows
KEY_PREFIX = "permission:"


def _request(call: Call) -> str:
    """What the tool call would do, in a line: the command, the files, else its description."""
    event = call.event
    subject = event.command or ", ".join(event.paths or ((event.file_path,) if event.file_path else ()))
    subject = subject or event.description or "(no details)"
    return subject if len(subject) <= REQUEST_CHARS else subject[: REQUEST_CHARS - 3] + "..."


def _pending(call: Call, task: Task, escalation: Escalation) -> Answer:
    """Refused while the operator decides (with a halt when ``halt_while_pending``)."""
    values = {"task_id": task.task_id, "escalation_id": escalation.escalation_id}
    halt = (
        call.render("hook_halt_pending", type=escalation.type, **values)
        if call.cfg.halt_while_pending
        else None
    )
    tool = call.event.tool_name or "this tool"
    if escalation.triggers and escalation.triggers[0].key.startswith(KEY_PREFIX):
        return Answer(deny=call.render("hook_permission_pending", tool_name=tool, **values), halt=halt)
    return Answer(
        deny=call.render("hook_deny_pending", type=escalation.type, tool_name=tool, **values), halt=halt
    )


async def _ask(call: Call, task: Task, key: str, earlier: Escalation | None) -> Answer:
    """Raise the approval escalation and refuse the request until it is answered."""
    tool = call.event.tool_name or "a tool"
    request = _request(call)
    raised = await escalation_raising.raise_escalation(
        call.rt,
        task_id=task.task_id,
        reason=call.render("hook_permission_reason", host=call.event.host, tool_name=tool, request=request),
        question=call.render("hook_permission_question", tool_name=tool, request=request),
        blocking=True,
        follow_up_of=earlier.escalation_id if earlier else None,
        key=key,
    )
    if raised.escalation is None:  # the task ended meanwhile
        return Answer()
    return _pending(call, task, raised.escalation)


async def permission_request(call: Call) -> Answer:
    """The operator's decision on a host's permission request (module docstring)."""
    if call.cfg.permission_requests != "ask" or not call.event.request_digest:
        return Answer()
    task = await call.task(create=True)
    if task is None:
        return Answer()
    # Recorded so that a termination holds for this session (services/hooks.py, rule 3).
    await hook_service.claim_event(call.rt, call.delivery(task.task_id, "permission"))
    state = await hook_service.hook_state(call.rt, task.task_id)
    key = KEY_PREFIX + call.event.request_digest
    found = await hook_service.permission_escalation(call.rt, task.task_id, key)
    waiting = await _waiting_answer(call, task, state.holding, found)
    if waiting is not None:
        return waiting
    if state.task.status in ENDED_STATUSES:
        return _ended(call, task, state.task.status, state.message)
    return await _decide(call, task, key, found)


async def _waiting_answer(
    call: Call, task: Task, holding: Escalation | None, found: Escalation | None
) -> Answer | None:
    """An operator's answer still to deliver, or another question's pause; None otherwise."""
    if found is not None and found.response is not None and found.acknowledged_at is None:
        if found.response.response_type != "approve" or not call.cfg.acknowledge_on_delivery:
            return await answered(call, task, found, stop=False)  # the operator's words, delivered
        return None
    if holding is not None and (found is None or holding.escalation_id != found.escalation_id):
        if holding.response is not None:
            return await answered(call, task, holding, stop=False)
        return _pending(call, task, holding)  # another question holds the task: a pause
    return None


async def _decide(call: Call, task: Task, key: str, found: Escalation | None) -> Answer:
    """Ask the operator, keep waiting, or allow on an approval."""
    if found is None or found.status == "withdrawn":
        return await _ask(call, task, key, found)
    if found.response is None:
        return _pending(call, task, found)
    if found.response.response_type != "approve":
        return await _ask(call, task, key, found)  # refused before and asked again: a new question
    if found.acknowledged_at is None:
        await escalation_delivery.acknowledge_response(
            call.rt,
            escalation_id=found.escalation_id,
            note=call.render("hook_ack_note", host=call.event.host),
        )
    return Answer(allow=True)


def _ended(call: Call, task: Task, status: str, message: str) -> Answer:
    """A terminated task refuses everything; a finished one leaves permissions to the user."""
    if status != "terminated_by_human":
        return Answer()
    return Answer(deny=call.render("hook_deny_stopped", task_id=task.task_id, status=status, message=message))
