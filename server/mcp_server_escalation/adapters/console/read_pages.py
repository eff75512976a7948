"""The console's read-only pages (queue, escalation, task, failure, answered, stats) and the
live stream that keeps them current: each needs the operator's session and reads the store
through the services, within the session's scope.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from ...errors import InvalidInput, NotFound
from ...rules.decide.triggers import COUNTER_LIMITS
from ...rules.wording.scope_refusals import SHOWN_ALLOWED
from ...rules.wording.words import kind_words
from ...services import escalation_lists, escalations, guidance, reports, tasks, verdicts
from ...services.operator_queue import QueueFilter, queue, read_place, told_when_fired
from . import charts, queue_view
from .base import ConsoleBase
from .forms import int_field
from .landing import login_location
from .live import STREAMS_PER_SESSION
from .refusals import refusal_text
from .rendering import path_segment

# What the page an answer or a verdict lands on says was done (its ``sent`` query value).
SENT = {"answer": "answer", "verdict": "verdict"}
# Rows of the answered list (the CLI's `escalations list --status resolved` shows as many).
ANSWERED_SHOWN = 50


class ReadPages(ConsoleBase):
    """The pages that show the store, and the change feed's stream that refreshes them."""

    async def queue_page(self, request: Request) -> Response:
        """Pending escalations and answers not yet acknowledged, filtered by the query string,
        a page at a time (``after``: the place the previous page ended)."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        wanted = QueueFilter(
            project=request.query_params.get("project", ""),
            agent=request.query_params.get("agent", ""),
            type=request.query_params.get("type", ""),
        )
        try:
            place_asked = read_place(request.query_params.get("after", ""))
            found = await queue(self.rt, wanted, place_asked, within=session.scope)
        except InvalidInput as exc:
            return self._error(request, 400, str(exc), session, "/")
        rows, place = queue_view.queue_rows(found.escalations), queue_view.queue_place(found, wanted)
        kinds = queue_view.kind_choices(wanted)
        return self._page(
            request, "queue.html", "Queue", session, wanted=wanted, rows=rows, place=place, kinds=kinds
        )

    async def escalation_page(self, request: Request) -> Response:
        """One escalation: what fired and its evidence, the question, and the answer form or the answer."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        escalation_id = int(request.path_params["id"])
        outside = await self._outside(request, session, escalation_id=escalation_id)
        if outside is not None:
            return outside
        try:
            escalation = await escalations.show_escalation(self.rt, escalation_id)
            told = await escalations.agent_message(self.rt, escalation_id)
            told_then = await told_when_fired(self.rt, escalation_id)
            verdict = await verdicts.verdict_of(self.rt, escalation_id)
        except NotFound as exc:
            return self._error(request, 404, refusal_text(self.book, exc, self.rt.db.path), session, "/")
        title = f"#{escalation.escalation_id} {kind_words(escalation.type)}"
        return self._page(
            request,
            "escalation.html",
            title,
            session,
            e=escalation,
            headline=queue_view.salient_line(escalation),
            told=told,
            told_then=told_then,
            verdict=verdict,
            sent=SENT.get(request.query_params.get("sent", "")),
        )

    async def task_page(self, request: Request) -> Response:
        """One task: its state, what its agent is told now, its escalations, counters and tests."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        task_id = str(request.path_params["task_id"])
        outside = await self._outside(request, session, task_id=task_id)
        if outside is not None:
            return outside
        try:
            after = int_field(request.query_params.get("after"), "after") or 0
            view = await tasks.get_task(self.rt, task_id)
            story = await tasks.timeline(self.rt, task_id, after)
            # Named by kind and status, the latest as many as get_task names, in one read.
            raised = await escalation_lists.list_escalations(
                self.rt, status="all", task_id=task_id, limit=tasks.ESCALATION_IDS_SHOWN
            )
        except NotFound as exc:
            return self._error(request, 404, refusal_text(self.book, exc, self.rt.db.path), session, "/")
        except InvalidInput as exc:
            return self._error(request, 400, str(exc), session, f"/tasks/{path_segment(task_id)}")
        title = f"Task {view.task.task_id}"
        return self._page(
            request, "task.html", title, session, view=view, limits=COUNTER_LIMITS, story=story, raised=raised
        )

    async def failure_page(self, request: Request) -> Response:
        """A failure's whole error: each occurrence's whole output and what changed between them."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        failure_id = str(request.path_params["failure_id"])
        outside = await self._outside(request, session, failure_id=failure_id)
        if outside is not None:
            return outside
        try:
            whole = await guidance.whole_failure(self.rt, failure_id)
        except NotFound as exc:
            return self._error(request, 404, refusal_text(self.book, exc, self.rt.db.path), session, "/")
        return self._page(
            request, "failure.html", f"Failure {whole.failure.failure_id}", session, whole=whole
        )

    async def answered_page(self, request: Request) -> Response:
        """The latest answered (or otherwise closed) escalations, each with its answer, who
        gave it and when, the verdict and the project: reviewed without opening each."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        rows, _ = await escalation_lists.review_escalations(
            self.rt, status="resolved", limit=ANSWERED_SHOWN, within=session.scope
        )
        return self._page(request, "answered.html", "Answered", session, rows=rows, shown=ANSWERED_SHOWN)

    async def stats_page(self, request: Request) -> Response:
        """The ``stats`` figures: time to answer, counts by kind and status, notifier health;
        a scoped session's count the tasks of its scope only, and say so."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        report = await reports.stats(self.rt, within=session.scope)
        buckets = await reports.answer_time_buckets(self.rt, within=session.scope)
        chart = charts.day_chart(report.per_day)
        return self._page(
            request,
            "stats.html",
            "Stats",
            session,
            report=report,
            buckets=buckets,
            chart=chart,
            scope=session.scope,
            shown=SHOWN_ALLOWED,
        )

    async def events(self, request: Request) -> Response:
        """Server-sent events: one ``change`` per batch of the change feed, from the process's
        one reader of it (``live.py``), a keep-alive comment between them, until the session ends."""
        session = self._session(request)
        if session is None:
            return self._refused(request, 401, "session", "/login")
        session_id = session.session_id
        if self.live.count(session_id) >= STREAMS_PER_SESSION:
            return self._refused(request, 429, "streams")

        async def stream() -> AsyncIterator[str]:
            # Opened here, not before the response: a stream is closed by the code that iterates it.
            receive = self.live.open(session_id)
            if receive is None:  # another request of the session took the last place meanwhile
                return
            yield "retry: 2000\n\n"
            async for ids in self.live.messages(session_id, receive):
                yield f"event: change\ndata: {json.dumps(ids)}\n\n" if ids else ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")
