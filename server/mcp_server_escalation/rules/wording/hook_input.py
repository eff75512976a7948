"""Why a hook event cannot be used, in words (pure): one wording for every door that takes one.

``hooks/dispatch.py`` raises ``HookInputError`` with the facts of the problem (an
``InputProblem``: which one, the limit, the name as sent, where the JSON stopped being
JSON); the command hook prints these words on stderr, the relay hands them to the hook it
answers for, the hook route over HTTP sends them as its 400's body and the spool logs them.
They come from the ``hook_input_*`` templates of ``prompts/hooks.toml``: a name on one line,
clipped, never a repr; the parser's complaint as a line and a column, never its text.
The other outcomes of a hook event (a bug, a store down, a report kept, a store that cannot
be opened or refuses the write) are worded in ``hooks/outcome.py``; their templates and
placeholders are listed here for the prompt book's check of them.

No prompt book is loaded here (only its type is named): the hook's fast path imports this
module's ``InputProblem`` and loads the book only when there is a problem to word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..reading.salient import one_line

if TYPE_CHECKING:
    from .book import Book

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


def hook_input_words(book: Book, found: InputProblem) -> str:
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


def database_error(failure: BaseException) -> bool:
    """Whether SQLite's or PostgreSQL's driver raised ``failure`` (told by its class's module:
    a hook run that met neither has imported neither)."""
    module = type(failure).__module__
    return module == "sqlite3" or module.split(".")[0] == "psycopg"


# Every template the store-down words use and its placeholders, for the prompt book's check
# of them. {details}: hook_store_down_details (where why the store does not answer is written)
# or hook_store_down_unlogged.
STORE_DOWN_TEMPLATES: dict[str, list[str]] = {
    "hook_store_down": ["details"],
    "hook_store_down_maybe_recorded": ["details"],
    "hook_store_down_kept": ["spool", "waiting", "details"],
    "hook_store_down_dropped": ["spool", "limit", "details"],
    "hook_store_down_details": ["log"],
    "hook_store_down_unlogged": [],
    "hook_kept_behind": ["spool", "waiting"],
    "hook_dropped_behind": ["spool", "limit"],
    "hook_dropped_unsafe_spool": ["spool"],
    # the hook route's 507 for a report dropped, before hook_http_not_recorded
    "hook_http_spool_full": ["limit"],
    "hook_http_spool_unsafe": [],
}


# Every template of a store the hook cannot open or that refuses its write, and their
# placeholders, for the prompt book's check of them. {details}: hook_store_details (the
# command that says why, and the log) or hook_store_unlogged. The hook route's own for a
# store that refused the write or failed it (hooks/outcome.py's Outcome) have none.
STORE_ERROR_TEMPLATES: dict[str, list[str]] = {
    "hook_store_unopened": ["details"],
    "hook_store_unwritable": ["details"],
    "hook_store_details": ["log"],
    "hook_store_unlogged": [],
    "hook_http_store_unwritable": [],
    "hook_http_store_failed": [],
}
