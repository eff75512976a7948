"""The templates of the question a client shows its human (prompts/operator.toml), with the
placeholders the code supplies: the question (or the console link's message), the agent's
options listed in it, the form's two fields, and the title of each answer the form offers."""

from __future__ import annotations

_ASKED = ["escalation_id", "type", "task_id", "title", "details", "options"]

TEMPLATE_FIELDS: dict[str, list[str]] = {
    "elicitation_question": _ASKED,
    "elicitation_url_message": _ASKED,
    "elicitation_question_options": ["options"],
    "elicitation_field_response_type": ["options"],
    "elicitation_field_text": [],
    "elicitation_answer_option": ["number", "option"],
    **{f"elicitation_answer_{kind}": [] for kind in ("guidance", "override", "approve", "terminate")},
}
