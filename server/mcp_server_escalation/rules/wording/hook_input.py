"""Why a hook event cannot be used, in words (pure): one wording for every door that takes one.

``hooks/dispatch.py`` raises ``HookInputError`` with the facts of the problem (an
``InputProblem``: which one, the limit, the name as sent, where the JSON stopped being
JSON); the command hook prints these words on stderr, the relay hands them to the hook it
answers for, the hook route over HTTP sends them as its 400's body and the spool logs them.
They come from the ``hook_input_*`` templates of ``prompts/hooks.toml``: a name on one line,
clipped, never a repr; the parser's complaint as a line and a column, never its text.
A hook run that fails unexpectedly (a bug) says so from the ``hook_failed*`` templates, and
where its details went (``hook_failed_words``); a hook run that meets its store down says
what became of its event from the ``hook_store_down*`` and ``hook_*_behind`` templates, and
where why the store does not answer was written (``hook_store_down_words``,
``hook_kept_words``); a hook run that cannot open its store at all, or whose store refuses
the write, says so from the ``hook_store_unopened`` and ``hook_store_unwritable`` templates
(``hook_store_error_words``): never the store's location
or its database's words.

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


def hook_failed_words(book: Book, log: str | None, failure: BaseException) -> list[str]:
    """The hook's lines on stderr for an unexpected ``failure``: no decision, and the ``log``
    its details were written to; without one, the error's kind and message on a second line
    (never its traceback: that is for a log). A database's own error (a full disk, a store
    that refused the write) is not a bug of ours, and the words say which it was."""
    template = "hook_store_failed" if database_error(failure) else "hook_failed"
    if log is not None:
        return [book.render(template, log=log)]
    message = one_line(str(failure)) or "(no message)"
    error = book.render("hook_failed_error", kind=type(failure).__name__, message=message)
    return [book.render(f"{template}_unlogged"), error]


def hook_http_failed_template(failure: BaseException, *, unwritable: bool) -> str:
    """The hook route's reason for an event it could not answer: the store refused the write
    (``unwritable``: a read-only store, a full disk), the store's database failed, or a bug."""
    if unwritable:
        return "hook_http_store_unwritable"
    return "hook_http_store_failed" if database_error(failure) else "hook_http_failed"


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


def _store_down_details(book: Book, log: str | None) -> str:
    """Where the outage's details are: ``log``, or (none written) who can say why."""
    if log is None:
        return book.render("hook_store_down_unlogged")
    return book.render("hook_store_down_details", log=log)


def hook_store_down_words(book: Book, recorded: bool | None, log: str | None) -> str:
    """The hook's line on stderr for an event the store did not answer and that is not kept
    (no report): not recorded (``recorded`` False) or maybe recorded (None), no decision."""
    template = "hook_store_down" if recorded is False else "hook_store_down_maybe_recorded"
    return book.render(template, details=_store_down_details(book, log))


def hook_kept_words(
    book: Book,
    spool: str,
    waiting: int | None,
    limit: int,
    *,
    outage: bool,
    log: str | None,
    unsafe: bool = False,
) -> str:
    """The hook's line on stderr for a report kept in ``spool`` with ``waiting`` others (None:
    the spool held ``limit`` and it was dropped; ``unsafe``: dropped, the folder not private),
    for an ``outage`` (its details in ``log``) or behind earlier events still being recorded."""
    if unsafe:
        return book.render("hook_dropped_unsafe_spool", spool=spool)
    if not outage:
        if waiting is None:
            return book.render("hook_dropped_behind", spool=spool, limit=limit)
        return book.render("hook_kept_behind", spool=spool, waiting=waiting)
    details = _store_down_details(book, log)
    if waiting is None:
        return book.render("hook_store_down_dropped", spool=spool, limit=limit, details=details)
    return book.render("hook_store_down_kept", spool=spool, waiting=waiting, details=details)


# Every template of a store the hook cannot open or that refuses its write, and their
# placeholders, for the prompt book's check of them. {details}: hook_store_details (the
# command that says why, and the log) or hook_store_unlogged. The hook route's own for a
# store that refused the write or failed it (hook_http_failed_template) have none.
STORE_ERROR_TEMPLATES: dict[str, list[str]] = {
    "hook_store_unopened": ["details"],
    "hook_store_unwritable": ["details"],
    "hook_store_details": ["log"],
    "hook_store_unlogged": [],
    "hook_http_store_unwritable": [],
    "hook_http_store_failed": [],
}


def hook_store_error_words(book: Book, log: str | None, *, unwritable: bool = False) -> str:
    """The hook's line on stderr for a store it could not open at all (no store can be made at
    its path, the file is no store, its schema is newer) or that refused its write
    (``unwritable``): nothing recorded, no decision, the setting to check, and where why was
    written (``log``; None: none could be written)."""
    template = "hook_store_unwritable" if unwritable else "hook_store_unopened"
    if log is None:
        return book.render(template, details=book.render("hook_store_unlogged"))
    return book.render(template, details=book.render("hook_store_details", log=log))
