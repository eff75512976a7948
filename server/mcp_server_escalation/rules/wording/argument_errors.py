"""Why a tool's arguments were refused, in words (pure): what the model reads instead of
pydantic's report.

pydantic reports a refused call as ``1 validation error for record_failureArguments`` and,
per problem, the field, its message, ``[type=string_too_long, input_value='xxx...',
input_type=str]`` and a link to pydantic's docs: a Python repr of the model's own input (up
to the text limit), an error code and a class name that tell the model nothing. Here each
problem is one phrase from the ``argument_*`` templates of ``prompts/tools.toml``: the field
as the model named it (``details.colour``, ``files_modified[0]``), what it must be and the
limit, never the value sent. A call with many problems names the first few and counts the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .book import Book

# A call may break a limit in every item of a 500-item list: the words name this many problems.
SHOWN_PROBLEMS = 5

# pydantic's error type -> the template that words it, and the placeholder it fills from
# the error's facts (``ctx``) with which of them: the limit, the values allowed, the pattern.
_WORDED: dict[str, tuple[str, tuple[str, str] | None]] = {
    "missing": ("argument_missing", None),
    "string_too_long": ("argument_text_too_long", ("limit", "max_length")),
    "string_too_short": ("argument_text_too_short", ("limit", "min_length")),
    "too_long": ("argument_list_too_long", ("limit", "max_length")),
    "too_short": ("argument_list_too_short", ("limit", "min_length")),
    "greater_than_equal": ("argument_at_least", ("limit", "ge")),
    "greater_than": ("argument_more_than", ("limit", "gt")),
    "less_than_equal": ("argument_at_most", ("limit", "le")),
    "less_than": ("argument_less_than", ("limit", "lt")),
    "literal_error": ("argument_one_of", ("values", "expected")),
    "enum": ("argument_one_of", ("values", "expected")),
    "string_pattern_mismatch": ("argument_pattern", ("pattern", "pattern")),
    "extra_forbidden": ("argument_unknown", None),
    "int_type": ("argument_whole_number", None),
    "int_parsing": ("argument_whole_number", None),
    "int_from_float": ("argument_whole_number", None),
    "float_type": ("argument_number", None),
    "float_parsing": ("argument_number", None),
    "finite_number": ("argument_finite_number", None),
    "string_type": ("argument_text", None),
    "bool_type": ("argument_true_or_false", None),
    "bool_parsing": ("argument_true_or_false", None),
    "list_type": ("argument_list", None),
    "dict_type": ("argument_object", None),
    "model_type": ("argument_object", None),
    "model_attributes_type": ("argument_object", None),
}
# Every template used here and its placeholders, for the prompt book's check of them.
TEMPLATE_FIELDS: dict[str, list[str]] = {
    **{template: ["field", *(fact[:1] if fact else ())] for template, fact in _WORDED.values()},
    "argument_other": ["field", "problem"],
    "argument_problems_more": ["problems", "more"],
}


def argument_error_words(book: Book, errors: Sequence[Mapping[str, Any]]) -> str:
    """The problems of one call (pydantic's ``ValidationError.errors()``), in words."""
    shown = "; ".join(_problem(book, error) for error in errors[:SHOWN_PROBLEMS])
    more = len(errors) - SHOWN_PROBLEMS
    return book.render("argument_problems_more", problems=shown, more=more) if more > 0 else shown


def _problem(book: Book, error: Mapping[str, Any]) -> str:
    field = field_path(error.get("loc", ()))
    ctx = error.get("ctx") or {}
    worded = _WORDED.get(str(error.get("type")))
    if worded is not None:
        template, fact = worded
        facts = {fact[0]: _number(ctx.get(fact[1], ""))} if fact else {}
        return book.render(template, field=field, **facts)
    if error.get("type") == "value_error" and "error" in ctx:
        # A validator of ours raised it: its message is already the model's words.
        return book.render("argument_other", field=field, problem=str(ctx["error"]))
    return book.render("argument_other", field=field, problem=str(error.get("msg", "")))


def field_path(loc: Sequence[str | int]) -> str:
    """Where a problem is, as the model named it: ``thresholds.same_error_repeated``,
    ``files_modified[0]`` (the call's arguments themselves: ``arguments``)."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "arguments"


def _number(value: Any) -> int | str:
    """A limit as written in a message: 0.5, 1, 65536 (a whole float without its ``.0``); a
    whole number stays one, so a template may say it with its noun ("1 character")."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else f"{value:g}"
    return value if isinstance(value, int) else str(value)
