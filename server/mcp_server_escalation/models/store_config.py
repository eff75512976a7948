"""The ``[store]`` table of the config file: how long the store may keep a caller waiting,
and how many connections a process holds (PostgreSQL; docs/postgresql.md).

The defaults keep every tool call and every hook run well within a host's patience (a
hook has 15 s in all): an operation that has no connection after ``connect_timeout_seconds``
or no answer after ``operation_timeout_seconds`` fails with a message that says so, and
the next one tries again.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class StoreConfig(BaseModel):
    """Bounds and connection counts of the store (the ``[store]`` table)."""

    # Built when a config's [store] table is validated, not at import (see settings.py).
    model_config = ConfigDict(extra="forbid", defer_build=True)

    connect_timeout_seconds: Annotated[
        int,
        # libpq counts whole seconds and treats less than 2 as 2.
        Field(ge=2, le=60, description="A new connection not made within this is given up"),
    ] = 3
    statement_timeout_seconds: Annotated[
        float, Field(gt=0, le=300, description="The database cancels a statement running longer")
    ] = 5
    lock_timeout_seconds: Annotated[
        float, Field(gt=0, le=300, description="The database gives up a row lock waited for longer")
    ] = 3
    operation_timeout_seconds: Annotated[
        float,
        Field(
            gt=0,
            le=600,
            description="The longest one store operation keeps its caller, waiting for a connection"
            " included; a database that stops answering (stalled) is cut off then",
        ),
    ] = 8
    writers: Annotated[int, Field(ge=1, le=32, description="Write connections a process holds at most")] = 1
    readers: Annotated[int, Field(ge=1, le=64, description="Read connections a process holds at most")] = 4

    @model_validator(mode="after")
    def _statement_within_operation(self) -> Self:
        # The database's own timeouts must fire first: their errors say what was slow.
        if self.statement_timeout_seconds >= self.operation_timeout_seconds:
            raise ValueError(
                f"statement_timeout_seconds ({self.statement_timeout_seconds:g}) must be less than"
                f" operation_timeout_seconds ({self.operation_timeout_seconds:g})"
            )
        return self
