"""The product's exception tree.

Every error a caller can fix is an ``EscalationError``; the MCP adapter turns it into a
tool error (``isError``) whose text the model reads, the CLI into a message on stderr and
a non-zero exit. Anything else is a bug and is reported as such.

The message is written for the model: field names and tool calls. A refusal a human
operator can meet also says what it is (``refusal``) and the values it names (``facts``),
so that the CLI and the console word it for a person from the same facts
(``rules/operators/refusals.py``) while the model's text stays as it is.

    EscalationError
    ├── InvalidInput          a field's value breaks a documented limit or format
    ├── NotFound              an id names nothing in the store
    ├── Conflict              the call is valid but the current state forbids it
    │   └── TaskEnded         an answer to an escalation of a task that ended (an agent's
    │                         write on such a task is no error: its result says stop)
    ├── Forbidden             the server's role may not do this
    ├── ConfigError           a config file, prompt template or data file is unusable
    └── StoreError            the store file cannot be opened (not a database, no access,
        │                     a schema newer than this version knows, another store's WAL)
        ├── StoreUnwritable   the store takes no writes now: a read-only file or file
        │                     system, or a full disk (the operator must act; reads still work)
        └── StoreUnavailable  the store does not answer now: its database is down, stalled,
                              out of connections, or a lock was held past the bound (the
                              call may be made again once it is back)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Self

# The log in which a store says, once, that it stopped answering (where it is and what its
# database said) and that it answers again (``store/postgres/pool.py``): the operator's to
# read. A hook run keeps it off its stderr, which is its host's (``cli/hook.py``).
OUTAGE_LOG = "mcp_server_escalation.store.outage"


class EscalationError(Exception):
    """Base of every error whose message tells the caller how to fix the call."""

    # "" for an error only the model's message words (rules/operators/refusals.py words the others).
    refusal: str = ""
    facts: Mapping[str, object] = MappingProxyType({})

    def because(self, refusal: str, **facts: object) -> Self:
        """This error, named for the operator's wording: what was refused and its values."""
        self.refusal = refusal
        self.facts = MappingProxyType(facts)
        return self


class InvalidInput(EscalationError):
    """A field's value is malformed or beyond its limit."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


class NotFound(EscalationError):
    """An id that names nothing in the store."""

    def __init__(self, field: str, value: object, hint: str = "") -> None:
        noun = field.removesuffix("_id")
        text = f"{field}: no {noun} with id {value!r}"
        super().__init__(f"{text}. {hint}" if hint else text)
        self.field = field
        self.because(f"no_{noun}", id=value)


class Conflict(EscalationError):
    """The call is well formed but the current state does not allow it."""


class TaskEnded(Conflict):
    """The task is no longer active; only reads are allowed."""


class Forbidden(EscalationError):
    """The server's role does not allow this call."""


class ConfigError(EscalationError):
    """A config file, prompt template or data file cannot be used."""


class StoreError(EscalationError):
    """The store file cannot be opened or is not an SQLite database."""


class StoreUnwritable(StoreError):
    """A write was refused by the store's file or disk; nothing of it was kept."""


class StoreUnavailable(StoreError):
    """The store did not answer within its bound; ``recorded`` says what became of the call.

    ``recorded`` is False when nothing of the call was kept (the connection failed before
    COMMIT was sent, or no connection could be had), None when COMMIT was sent and the answer
    was lost: the write may or may not have been kept, and is never sent again blindly.
    ``reason`` is the database's own words (the URL's password hidden), for the operator.
    """

    def __init__(self, location: str, reason: str, *, recorded: bool | None = False) -> None:
        kept = (
            "nothing was recorded"
            if recorded is False
            else "the last write may or may not have been recorded"
        )
        super().__init__(f"store {location} is unavailable ({reason}); {kept}")
        self.location = location
        self.reason = reason
        self.recorded = recorded
