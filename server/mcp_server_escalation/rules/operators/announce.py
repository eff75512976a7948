"""What operators and clients read about an escalation change, worded from prompts/operator.toml.

Pure: the escalation, the event and ``now`` in, text and JSON-ready dicts out.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ...clock import parse_iso
from ...models.escalations import Escalation
from ..bounds.evidence import clip, clip_texts, shortened
from ..reading.salient import headline as salient_headline
from ..wording.book import Book
from .choices import human_answers

HEADLINE_CHARS = 500
# What one notification may weigh, as sent (JSON, non-ASCII escaped): chat webhooks refuse
# larger bodies (Slack's message text stops at 40,000 characters, Discord's and Teams' limits
# are lower still), and a refused POST was retried forever. A larger escalation is sent
# shortened, naming the command that shows it whole.
NOTIFY_PAYLOAD_MAX_BYTES = 32 * 1024
# The fields a shortened notification keeps whole: ids, states and times, all small.
_KEPT = (
    "escalation_id",
    "task_id",
    "agent_id",
    "type",
    "priority",
    "blocking",
    "status",
    "response_options",
    "follow_up_of",
    "delivered_at",
    "acknowledged_at",
    "revision",
    "created_at",
    "updated_at",
)
# Each step shortens texts to this many characters and lists to this many items.
_STEPS = ((400, 5), (160, 3), (40, 1))


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


def notification_text(prompts: Book, escalation: Escalation, event: str, now: datetime) -> str:
    """The one-paragraph summary a chat webhook displays (``text``)."""
    if event == "renotify":
        return prompts.render(
            "notify_text_renotify",
            minutes=minutes_pending(escalation.created_at, now),
            **_values(escalation),
        )
    return prompts.render("notify_text", **_values(escalation))


def notification_payload(
    prompts: Book,
    escalation: Escalation,
    event: str,
    now: datetime,
    limit: int = NOTIFY_PAYLOAD_MAX_BYTES,
    console_url: str | None = None,
) -> dict[str, Any]:
    """What a notifier receives: the escalation's fields, plus ``event`` and ``text``; at
    most ``limit`` bytes as sent (``payload_body``), shortened when the whole is more.

    ``console_url``: the console's public base URL; the notification then carries the
    escalation's page there (``link``, kept whole when shortened), where the operator reads it
    whole and answers it, with the verdict the answer form asks."""
    payload = escalation.model_dump(mode="json")
    payload["event"] = event
    payload["text"] = notification_text(prompts, escalation, event, now)
    if console_url:
        payload["link"] = f"{console_url.rstrip('/')}/escalations/{escalation.escalation_id}"
        payload["text"] += " " + prompts.render("notify_link", link=payload["link"])
    if len(payload_body(payload)) <= limit:
        return payload
    kept = {key: payload[key] for key in (*_KEPT, "link") if key in payload}
    more = prompts.render("notify_more", escalation_id=escalation.escalation_id, bytes=f"{limit:,}")
    for text_limit, items in _STEPS:
        shorter = {
            **kept,
            "event": event,
            "text": clip(payload["text"], text_limit * 2),
            "reason": clip(escalation.reason or "", text_limit),
            "question": clip(escalation.question or "", text_limit),
            "options": shortened(escalation.options, text_limit, items),
            "triggers": shortened([_trigger_line(t) for t in payload["triggers"]], text_limit, items),
            "response": clip_texts(payload["response"], text_limit),
            "shortened": True,
            "more": more,
        }
        if len(payload_body(shorter)) <= limit:
            return shorter
    # Ids, states, a clipped summary and the command: a few KB whatever the escalation holds.
    return {**kept, "event": event, "text": clip(payload["text"], 400), "shortened": True, "more": more}


def _trigger_line(trigger: dict[str, Any]) -> dict[str, Any]:
    # Criteria and observations can hold hundreds of paths; the summary says what fired.
    return {key: trigger[key] for key in ("type", "summary", "fired_count", "at")}


def payload_body(payload: dict[str, Any]) -> bytes:
    """A notification as notifiers send it: JSON, keys sorted, non-ASCII escaped."""
    return json.dumps(payload, sort_keys=True).encode("utf-8")


def client_message(prompts: Book, escalation: Escalation, event: str) -> str | None:
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


# How each answer is given on the command line (``escalations respond``), in the order offered.
ANSWER_FLAGS = {
    "guidance": "--guidance TEXT",
    "override": "--override TEXT",
    "approve": "--approve [--file-limit N] [--add-scope GLOB]",
    "terminate": "--terminate [TEXT]",
}


def offered_answers(escalation: Escalation) -> list[str]:
    """The answers this escalation accepts from an operator, in the order they are offered."""
    allowed = set(human_answers(escalation))
    return [answer for answer in ANSWER_FLAGS if answer in allowed]


def answer_flags(escalation: Escalation) -> list[str]:
    """The ``respond`` flags this escalation accepts from an operator, in that order: the CLI's
    hint and the briefing prompt offer the same, and only what it accepts."""
    return [ANSWER_FLAGS[answer] for answer in offered_answers(escalation)]


def elicitation_question(
    prompts: Book, escalation: Escalation, *, template: str = "elicitation_question"
) -> str:
    """The question a client shows its human for a pending blocking escalation (above the
    form, or next to the console link with ``template="elicitation_url_message"``)."""
    values = _values(escalation)
    listed = "; ".join(f"{number}. {option}" for number, option in enumerate(escalation.options, 1))
    return prompts.render(
        template,
        escalation_id=escalation.escalation_id,
        type=escalation.type,
        task_id=escalation.task_id,
        title=values["title"],
        details=escalation.question or values["headline"],
        options=prompts.render("elicitation_question_options", options=listed) if listed else "",
    )
