"""The console as a door for refusals (rules/operators/refusals.py): answers by the form's choices,
fields by the form's labels, next steps as pages to open."""

from __future__ import annotations

from ...errors import EscalationError
from ...models.limits import OPERATOR_ANSWERS
from ...prompts import PromptBook
from ...rules.operators.refusals import Door, worded

# service field -> the template naming the form's field
_FIELDS = {
    "new_file_limit": "console_field_file_limit",
    "file_limit": "console_field_file_limit",
    "add_scope": "console_field_add_scope",
    "content": "console_field_content",
    "option": "console_field_option",
}


def console_door(book: PromptBook, db: str) -> Door:
    """The console's names: a choice of the form is its value, a field its label."""
    choices: dict[str, str] = {answer: answer for answer in OPERATOR_ANSWERS}
    fields = {name: book.render(template) for name, template in _FIELDS.items()}
    return Door(name="console", offers=choices, names={**choices, **fields}, db=db)


def refusal_text(book: PromptBook, error: EscalationError, db: str) -> str:
    """What the operator reads on the console's page about ``error``."""
    return worded(book, error, console_door(book, db))
