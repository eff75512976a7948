"""One hook event, end to end: bind it to a task, decide, record, answer.

The same service functions as the MCP tools, on the same store: ``check_edit`` gates an
edit, ``record_failure`` and ``report_progress`` record what happened, ``get_feedback``
briefs a new session, ``acknowledge_response`` closes the loop when the hook delivers an
operator's answer. The MCP SDK is never imported on this path.

The pause: while a blocking escalation holds the task, every tool call is denied except
read-only tools, read-only shell commands and this server's own MCP tools (so an agent
with the MCP server can still ``get_escalation`` and ``acknowledge_response``).

Acknowledgement without MCP: once the operator has answered, the next tool call that is
not exempt is denied with the answer as its reason, and the hook acknowledges the answer
on the agent's behalf at that moment (``[hooks] acknowledge_on_delivery``, on by default):
the model has then read it, which is what acknowledging means, and the task resumes. An
agent that has the MCP tools may acknowledge first itself; then nothing is denied.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from ..models.escalations import Escalation
from ..models.failures import FailureReport
from ..models.hook_config import HooksConfig
from ..models.limits import ENDED_STATUSES
from ..models.results import ProgressResult, RecordFailureResult
from ..models.tasks import Task
from ..rules.operators.announce import HEADLINE_CHARS
from ..rules.reading.salient import headline
from ..services import escalation_delivery, failures, progress
from ..services import hooks as hook_service
from ..services.firing import Recording
from ..services.hooks import HookState
from ..services.host_errors import record_host_error
from ..services.runtime import Runtime
from .events import Answer, HookEvent, ToolKind
from .plan import FailureCall, PostPlan, ProgressCall, edited_paths
from .triage import Triaged, exempt, rules


class Call(NamedTuple):
    """One triaged event on an open runtime: what triage worked out is used, never redone."""

    rt: Runtime
    triaged: Triaged
    cfg: HooksConfig

    @property
    def event(self) -> HookEvent:
        """The event as the host sent it."""
        return self.triaged.event

    @property
    def kind(self) -> ToolKind | None:
        """The event's tool, classified once by triage."""
        return self.triaged.kind

    @property
    def root(self) -> str:
        """The project root, worked out once by triage."""
        return self.triaged.root

    @property
    def exempt(self) -> bool:
        """Let through even during a pause: reading, and this server's own tools."""
        return exempt(self.triaged, self.cfg)

    async def task(self, *, create: bool) -> Task | None:
        """The task this event belongs to (services/hooks.py, rules 1-4)."""
        return await hook_service.bind_task(
            self.rt,
            host=self.event.host,
            session_id=self.event.session_id,
            root=self.root,
            cwd=self.event.cwd,
            override=self.triaged.override,
            create=create,
        )

    def delivery(self, task_id: str, stage: str, *, subject: str | None = None) -> hook_service.Delivery:
        """This delivery of the event, as its de-duplication claim records it.

        A result (``stage="post"``) about ``subject`` (a path, else the command) is paired
        with Cursor's after* event of the same call."""
        event = self.event
        post = stage == "post"
        return hook_service.Delivery(
            host=event.host,
            session_id=event.session_id,
            event=event.name,
            tool_name=event.tool_name,
            task_id=task_id,
            delivery_key=_delivery_key(event, stage),
            call_base=_call_base(event, subject) if post else None,
            call_source=event.source if post else None,
        )

    def render(self, template: str, **values: object) -> str:
        """Wording from prompts/hooks.toml."""
        return self.rt.prompts.render(template, **values)


async def handle(rt: Runtime, triaged: Triaged, cfg: HooksConfig) -> Answer:
    """The answer to one triaged event (empty: no decision), after recording what it reports."""
    handler = _HANDLERS.get(triaged.event.kind)
    return await handler(Call(rt=rt, triaged=triaged, cfg=cfg)) if handler else Answer()


def _delivery_key(event: HookEvent, stage: str) -> str | None:
    """One delivery of one event: the tool call's id, else Cursor's generation + payload."""
    if event.tool_use_id:
        return f"{stage}:{event.tool_use_id}"
    if event.generation_id:
        return f"{event.name}:{event.generation_id}:{event.digest}"
    return None


def _call_base(event: HookEvent, path: str | None) -> str | None:
    """What a postToolUse and an after* event of one call have in common: the generation
    id that ties them (Cursor's; no other host sends one)."""
    if not event.generation_id:
        return None
    if path:
        subject = "edit:" + path
    elif event.command:
        subject = "shell:" + event.command
    else:
        return None
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"{event.generation_id}:{digest}"


async def answered(call: Call, task: Task, holding: Escalation, *, stop: bool) -> Answer:
    """An answered, unacknowledged escalation: deliver it (and acknowledge), or say it waits."""
    if call.cfg.acknowledge_on_delivery:
        return await deliver(call, task, holding.escalation_id, stop=stop)
    response_type = holding.response.response_type if holding.response else holding.status
    text = call.render(
        "hook_stop_unacknowledged" if stop else "hook_deny_unacknowledged",
        task_id=task.task_id,
        escalation_id=holding.escalation_id,
        response_type=response_type,
    )
    return Answer(block=text) if stop else Answer(deny=text)


async def deliver(call: Call, task: Task, escalation_id: int, *, stop: bool) -> Answer:
    """Hand the operator's answer to the model and acknowledge it on the agent's behalf."""
    acked = await escalation_delivery.acknowledge_response(
        call.rt, escalation_id=escalation_id, note=call.render("hook_ack_note", host=call.event.host)
    )
    response = acked.escalation.response
    values = {
        "task_id": task.task_id,
        "escalation_id": escalation_id,
        "response_type": response.response_type if response else "",
        "content": response.content if response else "",
        "message": acked.message,
    }
    halt = None
    if acked.directive == "stop":
        halt = call.render("hook_halt_terminated", task_id=task.task_id, content=values["content"])
    if stop:
        return Answer(block=call.render("hook_stop_answer", **values), halt=halt)
    return Answer(deny=call.render("hook_deny_answer", **values), halt=halt)


async def _pre_tool(call: Call) -> Answer:
    paths = edited_paths(call.event, call.root, rules(call.cfg)) if call.kind == "edit" else ()
    gate = call.cfg.gate_edits and bool(paths)
    task = await call.task(create=gate)
    if task is None:
        return Answer()
    state = await hook_service.hook_state(call.rt, task.task_id)
    refused = None if call.exempt else await _refused(call, task, state)
    if refused is not None:
        return refused
    if state.task.status in ENDED_STATUSES or not gate:
        return Answer()
    return await _gate(call, task, paths)


async def _refused(call: Call, task: Task, state: HookState) -> Answer | None:
    """The pause's answer, or a terminated task's refusal; None when neither holds the call."""
    holding = state.holding
    if holding is not None and call.cfg.pause:
        if holding.response is not None:
            return await answered(call, task, holding, stop=False)
        if state.task.status not in ENDED_STATUSES:
            values = {"task_id": task.task_id, "escalation_id": holding.escalation_id, "type": holding.type}
            halt = call.render("hook_halt_pending", **values) if call.cfg.halt_while_pending else None
            deny = call.render("hook_deny_pending", tool_name=call.event.tool_name or "this tool", **values)
            return Answer(deny=deny, halt=halt)
    if state.task.status == "terminated_by_human":
        return Answer(
            deny=call.render(
                "hook_deny_stopped", task_id=task.task_id, status=state.task.status, message=state.message
            )
        )
    return None


async def _gate(call: Call, task: Task, paths: tuple[str, ...]) -> Answer:
    """``check_edit`` on every file of the call at once: a patch is refused whole if one of its
    files is."""
    check = progress.edit_check(call.rt, task_id=task.task_id, paths=list(paths))
    checked = await hook_service.check_once(call.rt, call.delivery(task.task_id, "pre"), check)
    if checked is None or checked.allowed:
        return Answer()  # allowed, or a duplicate delivery (the first one gates; deny wins at the host)
    return Answer(
        deny=call.render(
            "hook_deny_edit",
            task_id=task.task_id,
            path=", ".join(paths),
            reasons=" ".join(checked.reasons),
            message=checked.message,
        )
    )


def observed_failure(**fields: Any) -> FailureReport:
    """A failure a hook saw, as the report the service records.

    Not held to the limits of ``record_failure``'s arguments: an event is clipped to the
    hook's own limits as it is read (hooks/events.py), and a host's long output or tool name
    is recorded as the host gave it rather than lost with the whole call.
    """
    return FailureReport.model_construct(**fields)


async def _post_tool(call: Call) -> Answer:
    plan = call.triaged.plan
    if plan is None or (plan.failure is None and plan.progress is None):
        return Answer()
    task = await call.task(create=True)
    if task is None or task.status in ENDED_STATUSES:
        return Answer()
    failure = _failure_recording(call, task, plan.failure)
    # one tool call: when it failed, it is already counted as the failure
    progress_ = _progress_recording(call, task, plan.progress, new_call=plan.failure is None)
    delivery = call.delivery(task.task_id, "post", subject=_subject(plan))
    recorded = await hook_service.record_once(call.rt, delivery, failure, progress_)
    if recorded is None:
        return Answer()  # a duplicate delivery: the first one recorded the call
    return _recorded_answer(call, task, (recorded.failure, recorded.progress))


def _subject(plan: PostPlan) -> str | None:
    """What a finished call is about: the first file it changed, else the failure's file."""
    if plan.progress and plan.progress.files_modified:
        return plan.progress.files_modified[0]
    return plan.failure.file if plan.failure else None


def _failure_recording(
    call: Call, task: Task, failure: FailureCall | None
) -> Recording[RecordFailureResult] | None:
    if failure is None:
        return None
    report = observed_failure(task_id=task.task_id, step=call.cfg.step, **failure._asdict())
    return failures.failure_recording(
        call.rt,
        report,
        grace_calls=call.cfg.repeat_grace_calls,
        needs_change=call.cfg.repeats_need_a_change,
        within=call.triaged.within,
    )


def _progress_recording(
    call: Call, task: Task, p: ProgressCall | None, *, new_call: bool
) -> Recording[ProgressResult] | None:
    if p is None:
        return None
    return progress.progress_recording(
        call.rt,
        task_id=task.task_id,
        files_modified=list(p.files_modified),
        tests_passed=p.tests_passed,
        tests_failed=p.tests_failed,
        outcome=p.outcome,
        note=p.note,
        step=call.cfg.step,
        attempt=p.attempt,
        operation=p.operation,
        new_call=new_call,
    )


def _recorded_answer(
    call: Call, task: Task, results: tuple[RecordFailureResult | ProgressResult | None, ...]
) -> Answer:
    """What the model reads after its call was recorded: an escalation, else the warnings."""
    fired = None
    message = ""
    warnings: list[str] = []
    for result in results:
        if result is None:
            continue
        if result.escalation is not None:
            fired, message = result.escalation, result.message
        warnings += [result.warning] if result.warning else []
    if fired is not None:
        return Answer(
            context=call.render(
                "hook_post_escalated",
                task_id=task.task_id,
                escalation_id=fired.escalation_id,
                type=fired.type,
                summary=headline(fired.triggers[-1].summary, HEADLINE_CHARS) if fired.triggers else "",
                message=message,
            )
        )
    if warnings:
        # A step before a threshold: the model reads what it repeats; no human yet.
        return Answer(
            context=call.render("hook_post_warning", task_id=task.task_id, warning="\n".join(warnings))
        )
    return Answer()


async def _stop(call: Call) -> Answer:
    if not _may_hold_the_stop(call):
        return Answer()
    task = await call.task(create=False)
    if task is None:
        return Answer()
    state = await hook_service.hook_state(call.rt, task.task_id)
    if state.task.status in ENDED_STATUSES:
        return Answer()  # terminated or finished: stopping is exactly right
    return await _stop_answer(call, task, state)


def _may_hold_the_stop(call: Call) -> bool:
    event = call.event
    # One block per stop at most: the host sets stop_hook_active (Claude Code) or counts
    # loop_count (Cursor) while it continues because of a stop hook; never block again then.
    if not call.cfg.stop or event.stop_hook_active or event.loop_count > 0:
        return False
    return event.stop_status in (None, "completed")  # else the user aborted, or the agent errored


async def _stop_answer(call: Call, task: Task, state: HookState) -> Answer:
    """An answer waiting to be delivered, a pending question, or failing tests hold the stop."""
    holding = state.holding
    if holding is not None and holding.response is not None:
        return await answered(call, task, holding, stop=True)
    if holding is not None:
        # Pending: stopping is what a pause asks for; tell the user who must answer.
        return Answer(
            notice=call.render(
                "hook_notice_pending",
                task_id=task.task_id,
                escalation_id=holding.escalation_id,
                type=holding.type,
            )
        )
    latest = state.latest_test
    if latest is not None and latest.failed > 0:
        return Answer(
            block=call.render(
                "hook_stop_tests_failing", task_id=task.task_id, passed=latest.passed, failed=latest.failed
            )
        )
    return Answer()


async def _stop_failure(call: Call) -> Answer:
    """The turn ended on an API error of the host's model provider (``rules.reading.host_errors``).

    The host ignores any answer to this event, so it is only recorded: never a run of the
    agent's errors, a notice for authentication and billing, a blocker only when a passing
    error persists."""
    event = call.event
    task = await call.task(create=True)
    if task is None or task.status in ENDED_STATUSES:
        return Answer()
    error = event.failure_type or "unknown"
    await record_host_error(
        call.rt,
        task_id=task.task_id,
        host=event.host,
        error_type=error,
        message=event.output or f"API error: {error}",
        step=call.cfg.step,
        minutes=call.cfg.api_error_minutes,
    )
    return Answer()


async def _session_start(call: Call) -> Answer:
    if not call.cfg.session_context:
        return Answer()
    task = await call.task(create=False)
    if task is None:
        return Answer()
    from ..services.feedback import get_feedback  # noqa: PLC0415 (only this event renders feedback)

    state = await hook_service.hook_state(call.rt, task.task_id)
    feedback = await get_feedback(
        call.rt, task_id=task.task_id, step=call.cfg.step, max_chars=call.cfg.feedback_max_chars
    )
    return Answer(
        context=call.render(
            "hook_session_context",
            task_id=task.task_id,
            title=state.task.title,
            status=state.task.status,
            message=_session_message(call, state),
            feedback=feedback.rendered,
        )
    )


def _session_message(call: Call, state: hook_service.HookState) -> str:
    """What the session must do first, in words that hold with hooks only: the directive's
    message names MCP tools a hooks-only session does not have."""
    holding, task = state.holding, state.task
    if holding is None or task.status in ENDED_STATUSES:
        return state.message
    values = {"task_id": task.task_id, "escalation_id": holding.escalation_id}
    if holding.status == "pending":
        return call.render("hook_session_pending", type=holding.type, **values)
    if holding.response is not None and call.cfg.acknowledge_on_delivery:
        return call.render("hook_session_answered", response_type=holding.response.response_type, **values)
    return state.message


async def _permission_request(call: Call) -> Answer:
    from .approvals import permission_request  # noqa: PLC0415 (it builds on this module)

    return await permission_request(call)


# What each kind of event is answered by; a kind not here gets no decision.
_HANDLERS: dict[str, Callable[[Call], Awaitable[Answer]]] = {
    "pre_tool": _pre_tool,
    "post_tool": _post_tool,
    "post_tool_failure": _post_tool,
    "stop": _stop,
    "session_start": _session_start,
    "stop_failure": _stop_failure,
    "permission_request": _permission_request,
}
