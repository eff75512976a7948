"""What became of one hook event, and what each door answers its host for it: one module.

The three doors find an ``Outcome`` alike (``answered``, ``failed``) and answer it in the
words of ``prompts/hooks.toml``: a command hook (``cli/hook.py``, every host alike) and the
relay answering one (``relay_server.py``) with the same bytes (``for_command``: exit 0, as
exit 2 would mean "deny"; the host's JSON on stdout; a line on stderr per thing said), the
hook route with a status and a body (``for_http``: a status other than 200 only says what
went wrong; the host reads it as a non-blocking error). The host's user reads the answer,
some hosts' models too: where the store is, what its database said and a bug's traceback
go to a log instead (``Notes``: the store's relay daemons' log, or the server's).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..errors import EscalationError, StoreError, StoreUnavailable, StoreUnwritable
from ..rules.reading.salient import one_line
from ..rules.wording.hook_input import database_error, hook_input_words
from .dispatch import HookInputError, warning
from .relay_spawn import note_failure, note_outage

if TYPE_CHECKING:  # a hook run that only reads loads nothing of the spool
    from ..rules.wording.book import Book
    from .spool import Kept

log = logging.getLogger(__name__)


class Outcome(enum.Enum):
    """What became of one hook event, the hook route's status for it and, for a failure, the
    reason its body says before "no decision". A store that refuses the write or whose
    database failed is the store's failure (503); one that cannot be opened, or a config
    problem, is met at the server's start, never per event, so either is a bug there. A
    report dropped: 507, Insufficient Storage (a retry would meet the same full spool)."""

    ANSWERED = ("answered", 200, "")
    KEPT = ("kept in the spool", 200, "")
    DROPPED = ("dropped: the spool full or not private", 507, "")
    STORE_DOWN = ("store not answering", 503, "")
    STORE_UNOPENED = ("store not opened", 500, "hook_http_failed")
    STORE_UNWRITABLE = ("store refused the write", 503, "hook_http_store_unwritable")
    DATABASE_FAILED = ("database failed", 503, "hook_http_store_failed")
    INPUT_PROBLEM = ("event not usable", 400, "")
    SETTINGS_PROBLEM = ("config or prompts problem", 500, "hook_http_failed")
    BUG = ("bug", 500, "hook_http_failed")

    def __init__(self, words: str, http_status: int, http_reason: str) -> None:
        self.words, self.http_status, self.http_reason = words, http_status, http_reason


@dataclass(frozen=True)
class Ending:
    """An outcome and what it holds: the host's JSON, the report kept, or what was raised."""

    outcome: Outcome
    output: str = ""
    kept: Kept | None = None
    error: BaseException | None = None


def answered(output: str, kept: Kept | None) -> Ending:
    """An event handled: ``output`` for the host, or ``kept`` in the spool (or dropped)."""
    if kept is None:
        return Ending(Outcome.ANSWERED, output=output)
    return Ending(Outcome.DROPPED if kept.waiting is None else Outcome.KEPT, kept=kept)


def failed(error: BaseException) -> Ending:
    """An event whose handling raised ``error``."""
    if isinstance(error, HookInputError):
        outcome = Outcome.INPUT_PROBLEM
    elif isinstance(error, StoreUnavailable):  # a check before a tool call: no report to keep
        outcome = Outcome.STORE_DOWN
    elif isinstance(error, StoreError):
        outcome = Outcome.STORE_UNWRITABLE if isinstance(error, StoreUnwritable) else Outcome.STORE_UNOPENED
    elif isinstance(error, EscalationError):
        outcome = Outcome.SETTINGS_PROBLEM
    else:  # a database's own error is no bug of ours, and the words say which it was
        outcome = Outcome.DATABASE_FAILED if database_error(error) else Outcome.BUG
    return Ending(outcome, error=error)


# --- A command hook, and the relay answering one ----------------------------------------


class Notes(Protocol):
    """Where what the host must not read is written; each gives the log (None: not written)."""

    def outage(self, error: StoreError) -> str | None: ...

    def failure(self, error: BaseException) -> str | None: ...


@dataclass(frozen=True)
class DaemonsLog:
    """A hook run's notes: where a relay that answered would write them. Blocking."""

    db_flag: str | None
    env: Mapping[str, str]
    cwd: str

    def outage(self, error: StoreError) -> str | None:
        return note_outage(self.db_flag, self.env, self.cwd, error)

    def failure(self, error: BaseException) -> str | None:
        return note_failure(self.db_flag, self.env, self.cwd, error)


@dataclass(frozen=True)
class CommandAnswer:
    """What a command hook prints: the host's JSON on stdout, its lines on stderr; exit 0."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0

    @classmethod
    def giving(cls, output: str) -> CommandAnswer:
        """The answer that prints the host's JSON ``output`` ("": no decision)."""
        return cls(stdout=output + "\n" if output else "")


def for_command(ending: Ending, book: Book, notes: Notes) -> CommandAnswer:
    """What a command hook answers for ``ending`` (blocking when ``notes`` are written)."""
    if ending.kept is not None:
        where = None if ending.kept.outage is None else notes.outage(ending.kept.outage)
        return CommandAnswer(stderr=warning(kept_words(book, ending.kept, where)))
    if ending.error is None:
        return CommandAnswer.giving(ending.output)
    lines = _failure_lines(ending.error, ending.outcome, book, notes)
    return CommandAnswer(stderr="".join(warning(line) for line in lines))


def _failure_lines(error: BaseException, outcome: Outcome, book: Book, notes: Notes) -> list[str]:
    if isinstance(error, HookInputError):
        return [hook_input_words(book, error.problem)]
    if isinstance(error, StoreUnavailable):  # not recorded (False), or maybe (None)
        template = "hook_store_down" if error.recorded is False else "hook_store_down_maybe_recorded"
        return [book.render(template, details=_details(book, notes.outage(error), "hook_store_down"))]
    if isinstance(error, StoreError):  # the setting to check, and where why was written
        details = _details(book, notes.outage(error), "hook_store")
        template = "hook_store_unwritable" if outcome is Outcome.STORE_UNWRITABLE else "hook_store_unopened"
        return [book.render(template, details=details)]
    if outcome is Outcome.SETTINGS_PROBLEM:  # a person needs the text, and it names no store
        return [f"no decision: {error}"]
    template = "hook_store_failed" if outcome is Outcome.DATABASE_FAILED else "hook_failed"
    where = notes.failure(error)
    if where is not None:
        return [book.render(template, log=where)]
    # No log: the error's kind and message on a second line (a traceback is for a log).
    message = one_line(str(error)) or "(no message)"
    kind = type(error).__name__
    return [book.render(f"{template}_unlogged"), book.render("hook_failed_error", kind=kind, message=message)]


def _details(book: Book, where: str | None, family: str) -> str:
    """Where the store's failure's details are (``family``_details), or (none written) who
    can say why (``family``_unlogged)."""
    return book.render(f"{family}_unlogged") if where is None else book.render(f"{family}_details", log=where)


def kept_words(book: Book, kept: Kept, where: str | None) -> str:
    """The hook's line for ``kept``, for an outage (its details in ``where``) or behind
    earlier events still being recorded; dropped when the spool was full or not private."""
    spool = str(kept.folder)
    if kept.unsafe:
        return book.render("hook_dropped_unsafe_spool", spool=spool)
    if kept.outage is None and kept.waiting is None:
        return book.render("hook_dropped_behind", spool=spool, limit=kept.limit)
    if kept.outage is None:
        return book.render("hook_kept_behind", spool=spool, waiting=kept.waiting)
    details = _details(book, where, "hook_store_down")
    if kept.waiting is None:
        return book.render("hook_store_down_dropped", spool=spool, limit=kept.limit, details=details)
    return book.render("hook_store_down_kept", spool=spool, waiting=kept.waiting, details=details)


# --- The hook route over HTTP -------------------------------------------------------------

RETRY_AFTER = {"Retry-After": "30"}  # a store down comes back: the host may post again


@dataclass(frozen=True)
class HttpAnswer:
    """The route's response: the host's JSON (200), or one line of words saying why not."""

    status: int
    body: str
    media_type: str | None = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)


def for_http(ending: Ending, book: Book) -> HttpAnswer:
    """The route's answer for ``ending``; its details go to the server's log."""
    status = ending.outcome.http_status
    error, kept = ending.error, ending.kept
    if ending.outcome is Outcome.ANSWERED or (kept is not None and kept.waiting is not None):
        if kept is not None:  # an event taken, as far as the host needs to know
            log.info("hook event over HTTP kept in the spool %s (%d waiting)", kept.folder, kept.waiting)
        return HttpAnswer(status, ending.output, "application/json" if ending.output else None)
    if kept is not None:  # told, not answered with an empty body that reads as an event taken
        told = "is not a private folder" if kept.unsafe else "is full"
        log.warning("hook event over HTTP dropped: the spool %s %s", kept.folder, told)
        full = book.render("hook_http_spool_full", limit=kept.limit)
        reason = book.render("hook_http_spool_unsafe") if kept.unsafe else full
        return _said(status, not_recorded(book, reason))
    if isinstance(error, HookInputError):
        return _said(status, hook_input_words(book, error.problem))
    if isinstance(error, StoreUnavailable):  # the store logs its outage once, not per event
        down = "hook_http_store_down" if error.recorded is False else "hook_http_store_down_maybe_recorded"
        return _said(status, no_decision(book, down), RETRY_AFTER)
    if status == 500:
        log.error("hook event over HTTP failed", exc_info=error)
    else:  # the store's failure, no bug of ours: one line, without a traceback
        log.error("hook event over HTTP not recorded: its store failed: %s: %s", type(error).__name__, error)
    return _said(status, no_decision(book, ending.outcome.http_reason))


def _said(status: int, words: str, headers: dict[str, str] | None = None) -> HttpAnswer:
    return HttpAnswer(status, words + "\n", headers=headers or {})  # one line of plain text


def not_recorded(book: Book, reason: str) -> str:
    """The words for an event refused before it is recorded, or dropped."""
    return book.render("hook_http_not_recorded", reason=reason)


def no_decision(book: Book, template: str) -> str:
    """The words for an event answered without a decision, ``template`` saying why."""
    return book.render("hook_http_no_decision", reason=book.render(template))
