"""The answer form's fields: what an operator filled in, as the service records it."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import FormData

from ...errors import InvalidInput
from ...models.limits import TEXT_MAX
from ...rules.operators.choices import option_with_text
from ...services import escalations
from ...services.runtime import Runtime


@dataclass(frozen=True)
class Answer:
    """What the answer form asks the service to record."""

    response_type: str
    content: str
    new_file_limit: int | None
    add_scope: list[str]
    verdict: str | None


async def answer_fields(rt: Runtime, escalation_id: int, form: FormData) -> Answer:
    """The answer the form holds; an option picked is its text, sent as guidance."""
    get = form.get
    response_type = str(get("response_type") or "")
    content = str(get("content") or "")
    option = str(get("option") or "")
    if option:
        escalation = await escalations.show_escalation(rt, escalation_id)
        index = int_field(option, "option")
        if index is None or not 1 <= index <= len(escalation.options):
            raise InvalidInput("option", f"pick one of 1 to {len(escalation.options)}").because(
                "option_range", field="option", count=len(escalation.options)
            )
        response_type = response_type or "guidance"
        content = option_with_text(escalation.options[index - 1], content)
    if not response_type:
        raise InvalidInput("response_type", "choose the kind of answer").because("no_answer_kind")
    if len(content) > TEXT_MAX:
        raise InvalidInput("content", f"{len(content)} characters, more than {TEXT_MAX}").because(
            "too_long", field="content", length=len(content), limit=TEXT_MAX
        )
    scope = [line.strip() for line in str(get("add_scope") or "").splitlines() if line.strip()]
    verdict = str(get("verdict") or "") or None
    return Answer(response_type, content, int_field(get("file_limit"), "file_limit"), scope, verdict)


def int_field(value: object, field: str) -> int | None:
    """A whole number a form field holds, None when it is empty."""
    text = str(value or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidInput(field, f"{text[:40]!r} is not a whole number").because(
            "not_a_number", field=field, text=text[:40]
        ) from None
