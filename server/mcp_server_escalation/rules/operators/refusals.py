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

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...errors import EscalationError
from ...models.limits import OPERATOR_ANSWERS, TEXT_MAX
from ..wording.book import Book

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


def worded(book: Book, error: EscalationError, door: Door) -> str:
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
    values = _VALUES.get(refusal)
    return values(facts, door) if values else None


Facts = dict[str, object]


def _as_given(facts: Facts, _door: Door) -> Facts:
    return facts


def _not_an_answer(facts: Facts, door: Door) -> Facts:
    return {
        "escalation_id": facts["escalation_id"],
        "type": facts["type"],
        "answer": door.called(str(facts["response_type"])),
        "answers": _offers(door, facts["options"]),
    }


def _approve_only(facts: Facts, door: Door) -> Facts:
    return {
        "answer": door.called(str(facts["response_type"])),
        "approve": door.called("approve"),
        "file_limit": door.called("new_file_limit"),
        "add_scope": door.called("add_scope"),
    }


def _field_named(field: str | None) -> Callable[[Facts, Door], Facts]:
    """The facts with the field the door calls ``field`` (None: the one the facts name)."""

    def values(facts: Facts, door: Door) -> Facts:
        return {**facts, "field": door.called(field or str(facts["field"]))}

    return values


# Each refusal's template values, from the facts the service gave and the door's own names.
_VALUES: dict[str, Callable[[Facts, Door], Facts]] = {
    "no_escalation": lambda facts, door: {"escalation_id": facts["id"], "db": door.db},
    "no_task": lambda facts, door: {"task_id": facts["id"], "db": door.db},
    "answered": _as_given,
    "closed": _as_given,
    "task_ended": _as_given,
    # The revision numbers are the form's, not the page's: a person never sees them.
    "changed": lambda facts, _door: {"escalation_id": facts["escalation_id"]},
    "not_an_answer": _not_an_answer,
    "needs_text": lambda facts, door: {"answer": door.called(str(facts["response_type"])), "limit": TEXT_MAX},
    "approve_only": _approve_only,
    "limit_below_modified": _field_named("new_file_limit"),
    "file_limit_range": _field_named("new_file_limit"),
    "scope_too_large": _field_named("add_scope"),
    "too_long": _field_named(None),
    "not_a_number": _field_named(None),
    "option_range": _field_named(None),
    "no_answer_kind": lambda _facts, door: {"answers": _offers(door, None)},
}
