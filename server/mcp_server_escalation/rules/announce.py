"""What operators and clients read about an escalation change, worded from prompts/operator.toml.

Pure: the escalation, the event and ``now`` in, text and JSON-ready dicts out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..clock import parse_iso
from ..models.escalations import Escalation
from ..prompts import PromptBook
from .salient import headline as salient_headline

HEADLINE_CHARS = 500
# Elicitation offers what a human may answer; withdrawing is the agent's own move.
_HUMAN_ANSWERS = ("guidance", "override", "approve", "terminate")


def minutes_pending(created_at: str, now: datetime) -> int:
    """Whole minutes since the escalation was created (for the re-notification text)."""
    return max(0, int((now - parse_iso(created_at)).total_seconds() // 60))


def headline(escalation: Escalation) -> str:
    """One line: the first trigger's summary, or the agent's reason.

    Summaries are one line when written; one stored before that, or an agent's reason, may
    be a whole tool output: then its salient error line, never its banner or a newline.
    """
    text = escalation.triggers[0].summary if escalation.triggers else (escalation.reason or "")
    return salient_headline(text, HEADLINE_CHARS)


def _values(escalation: Escalation) -> dict[str, Any]:
    return {
        "priority": escalation.priority,
        "escalation_id": escalation.escalation_id,
        "type": escalation.type,
        "task_id": escalation.task_id,
        "title": escalation.context.get("task", {}).get("title", ""),
        "headline": headline(escalation),
        "options": ", ".join(escalation.response_options),
    }


def notification_text(prompts: PromptBook, escalation: Escalation, event: str, now: datetime) -> str:
    """The one-paragraph summary a chat webhook displays (``text``)."""
    if event == "renotify":
        return prompts.render(
            "notify_text_renotify",
            minutes=minutes_pending(escalation.created_at, now),
            **_values(escalation),
        )
    return prompts.render("notify_text", **_values(escalation))


def notification_payload(
    prompts: PromptBook, escalation: Escalation, event: str, now: datetime
) -> dict[str, Any]:
    """What a notifier receives: the escalation's fields, plus ``event`` and ``text``."""
    payload = escalation.model_dump(mode="json")
    payload["event"] = event
    payload["text"] = notification_text(prompts, escalation, event, now)
    return payload


def client_message(prompts: PromptBook, escalation: Escalation, event: str) -> str | None:
    """The log message a connected client gets for this change (None: resource update only)."""
    values = _values(escalation)
    if event in ("created", "updated"):
        return prompts.render(
            f"client_escalation_{event}",
            escalation_id=escalation.escalation_id,
            type=escalation.type,
            task_id=escalation.task_id,
            headline=values["headline"],
        )
    if event == "answered" and escalation.response is not None:
        return prompts.render(
            "client_escalation_answered",
            escalation_id=escalation.escalation_id,
            task_id=escalation.task_id,
            response_type=escalation.response.response_type,
            responder=escalation.response.responder or "operator",
        )
    if event == "closed":
        return prompts.render(
            "client_escalation_closed",
            escalation_id=escalation.escalation_id,
            task_id=escalation.task_id,
            status=escalation.status,
        )
    return None


def human_answers(escalation: Escalation) -> list[str]:
    """The response types a human may pick for this escalation in an elicitation form."""
    return [option for option in escalation.response_options if option in _HUMAN_ANSWERS]


def elicitation_question(prompts: PromptBook, escalation: Escalation) -> str:
    """The question a client shows its human for a pending blocking escalation."""
    values = _values(escalation)
    return prompts.render(
        "elicitation_question",
        escalation_id=escalation.escalation_id,
        type=escalation.type,
        task_id=escalation.task_id,
        title=values["title"],
        details=escalation.question or values["headline"],
    )
