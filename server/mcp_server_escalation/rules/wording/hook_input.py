"""Why a hook event cannot be used, in words (pure): one wording for every door that takes one.

``hooks/dispatch.py`` raises ``HookInputError`` with the facts of the problem (an
``InputProblem``: which one, the limit, the name as sent, where the JSON stopped being
JSON); the command hook prints these words on stderr, the relay hands them to the hook it
answers for, the hook route over HTTP sends them as its 400's body and the spool logs them.
They come from the ``hook_input_*`` templates of ``prompts/hooks.toml``: a name on one line,
clipped, never a repr; the parser's complaint as a line and a column, never its text.
A hook run that fails unexpectedly (a bug) says so from the ``hook_failed*`` templates, and
where its details went (``hook_failed_words``).

No prompt book is loaded here (only its type is named): the hook's fast path imports this
module's ``InputProblem`` and loads the book only when there is a problem to word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..reading.salient import one_line

if TYPE_CHECKING:
    from ...prompts import PromptBook

Problem = Literal[
    "too_large",
    "not_utf8",
    "malformed_json",
    "too_deep",
    "unreadable",
    "not_object",
    "no_cwd",
    "unknown_event",
]
# An event's name, a host or a task as sent may be kilobytes long: a hook's refusal names
# each on one line of at most this (the hook route's too).
NAME_CHARS = 80


@dataclass(frozen=True)
class InputProblem:
    """What is wrong with one event: ``limit`` for a size, ``name`` for an event not handled,
    ``line`` and ``column`` where malformed JSON stops, ``byte`` the first that is no UTF-8
    (all counted from 1)."""

    problem: Problem
    limit: int = 0
    name: str = ""
    line: int = 0
    column: int = 0
    byte: int = 0


def hook_input_words(book: PromptBook, found: InputProblem) -> str:
    """What a person (or a model) reads about ``found``."""
    if found.problem in ("too_large", "no_cwd"):
        return book.render(f"hook_input_{found.problem}", limit=found.limit)
    if found.problem == "not_utf8":
        return book.render("hook_input_not_utf8", byte=found.byte)
    if found.problem == "malformed_json":
        return book.render("hook_input_malformed_json", line=found.line, column=found.column)
    if found.problem == "unknown_event":
        named = one_line(found.name, NAME_CHARS)
        if not named:
            return book.render("hook_input_unnamed_event")
        return book.render("hook_input_unknown_event", event=named)
    return book.render(f"hook_input_{found.problem}")


def hook_failed_words(book: PromptBook, log: str | None, failure: BaseException) -> list[str]:
    """The hook's lines on stderr for an unexpected ``failure``: no decision, and the ``log``
    its details were written to; without one, the error's kind and message on a second line
    (never its traceback: that is for a log). A database's own error (a full disk, a store
    that refused the write) is not a bug of ours, and the words say which it was."""
    template = "hook_store_failed" if _database_error(failure) else "hook_failed"
    if log is not None:
        return [book.render(template, log=log)]
    message = one_line(str(failure)) or "(no message)"
    error = book.render("hook_failed_error", kind=type(failure).__name__, message=message)
    return [book.render(f"{template}_unlogged"), error]


def _database_error(failure: BaseException) -> bool:
    """Whether SQLite's or PostgreSQL's driver raised ``failure`` (told by its class's module:
    a hook run that met neither has imported neither)."""
    module = type(failure).__module__
    return module == "sqlite3" or module.split(".")[0] == "psycopg"
