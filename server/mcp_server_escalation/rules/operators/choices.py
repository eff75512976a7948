"""The answers a person picks from in a client's form: the agent's options, then the kinds of
answer the escalation allows. Pure: the escalation and the wording in, the choices out.

An option picked is sent as guidance whose text is the option, with whatever the person
wrote after it: the console's form does the same, so one pick means one thing everywhere.
"""

from __future__ import annotations

from typing import NamedTuple

from ...models.escalations import Escalation
from ...models.limits import OPERATOR_ANSWERS
from ..wording.book import Book

OPTION_PREFIX = "option-"  # the key of the agent's option N in a form: option-1, option-2, ...


class Choice(NamedTuple):
    """One answer of the form: the key it sends back, and what the person reads."""

    key: str
    title: str


def human_answers(escalation: Escalation) -> list[str]:
    """The response types a human may pick for this escalation in an elicitation form."""
    return [option for option in escalation.response_options if option in OPERATOR_ANSWERS]


def form_choices(prompts: Book, escalation: Escalation) -> list[Choice]:
    """Every answer the form offers: each of the agent's options, then each allowed kind."""
    options = [
        Choice(
            f"{OPTION_PREFIX}{number}",
            prompts.render("elicitation_answer_option", number=number, option=text),
        )
        for number, text in enumerate(escalation.options, 1)
    ]
    kinds = [Choice(kind, prompts.render(f"elicitation_answer_{kind}")) for kind in human_answers(escalation)]
    return options + kinds


def picked(escalation: Escalation, key: str, text: str) -> tuple[str, str]:
    """The response type and text a form's answer records: an option is guidance with its
    words first, then the person's own (if any); a kind of answer is itself, with the text."""
    if not key.startswith(OPTION_PREFIX):
        return key, text
    option = escalation.options[int(key.removeprefix(OPTION_PREFIX)) - 1]
    return "guidance", option_with_text(option, text)


def option_with_text(option: str, text: str) -> str:
    """An option picked, followed by what the person added to it."""
    return f"{option}\n\n{text}".strip() if text.strip() else option
