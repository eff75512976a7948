"""A service's refusal in the operator's words, the same for the CLI and the console (pure).

A refusal's message is written for the model: field names (``response_type``,
``new_file_limit``) and tool calls (``list_escalations``). An operator answering from the
CLI or the console met that text as it was. The services name each refusal a person can
meet (``EscalationError.refusal``) with the values it concerns (``facts``); here it becomes
a ``refused_*`` template of ``prompts/operator.toml``, filled with the door's own names for
what the operator gave (a flag or a form field) and, where there is one, the door's next
step (a command to run, a page to reload: its ``{door}_next_*`` template). A refusal not
named here keeps the service's message, which is still true, only less friendly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import EscalationError
from ..models.limits import OPERATOR_ANSWERS
from ..prompts import PromptBook

# refusal -> the door's next step after it (its ``{door}_next_{kind}`` template)
_NEXT = {
    "no_escalation": "list",
    "no_task": "tasks",
    "answered": "show",
    "closed": "show",
    "task_ended": "show",
    "changed": "show",
}


@dataclass(frozen=True)
class Door:
    """How one surface names what the operator gives, and which next-step templates it has."""

    name: str  # "cli" or "console": the prefix of its next-step templates
    offers: Mapping[str, str]  # response type -> how the door offers it ("--guidance TEXT")
    names: Mapping[str, str]  # response type or service field -> the door's name for it
    db: str  # the store's path
    store: str = ""  # what a printed command needs to reach this store (" --db PATH")

    def called(self, name: str) -> str:
        """The door's name for a response type or field (the field itself when it has none)."""
        return self.names.get(name, name)


def worded(book: PromptBook, error: EscalationError, door: Door) -> str:
    """What the operator reads about ``error`` at ``door``."""
    values = _values(error.refusal, dict(error.facts), door)
    if values is None:
        return str(error)
    kind = _NEXT.get(error.refusal)
    if kind is not None:
        values["next"] = book.render(
            f"{door.name}_next_{kind}",
            **_next_values(kind, values, door),
        )
    return book.render(f"refused_{error.refusal}", **values)


def _next_values(kind: str, values: dict[str, object], door: Door) -> dict[str, object]:
    if kind == "show":
        return {"escalation_id": values["escalation_id"], "store": door.store}
    return {"store": door.store}


def _offers(door: Door, options: object) -> str:
    allowed = set(options) if isinstance(options, tuple | list) else set(OPERATOR_ANSWERS)
    return ", ".join(door.offers[a] for a in OPERATOR_ANSWERS if a in allowed and a in door.offers)


def _values(refusal: str, facts: dict[str, object], door: Door) -> dict[str, object] | None:
    """The template's values for ``refusal`` (None: a refusal without an operator's wording)."""
    if refusal == "no_escalation":
        return {"escalation_id": facts["id"], "db": door.db}
    if refusal == "no_task":
        return {"task_id": facts["id"], "db": door.db}
    if refusal in ("answered", "closed", "task_ended", "changed"):
        return facts
    if refusal == "not_an_answer":
        return {
            "escalation_id": facts["escalation_id"],
            "type": facts["type"],
            "answer": door.called(str(facts["response_type"])),
            "answers": _offers(door, facts["options"]),
        }
    if refusal in ("needs_text", "approve_only"):
        return _answer_values(refusal, facts, door)
    if refusal in ("limit_below_modified", "file_limit_range"):
        return {**facts, "field": door.called("new_file_limit")}
    if refusal == "scope_too_large":
        return {**facts, "field": door.called("add_scope")}
    if refusal in ("too_long", "not_a_number", "option_range"):
        return {**facts, "field": door.called(str(facts["field"]))}
    if refusal == "no_answer_kind":
        return {"answers": _offers(door, None)}
    return None


def _answer_values(refusal: str, facts: dict[str, object], door: Door) -> dict[str, object]:
    answer = door.called(str(facts["response_type"]))
    if refusal == "needs_text":
        return {"answer": answer}
    return {
        "answer": answer,
        "approve": door.called("approve"),
        "file_limit": door.called("new_file_limit"),
        "add_scope": door.called("add_scope"),
    }
