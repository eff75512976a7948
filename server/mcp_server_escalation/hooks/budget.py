"""What a hook run's store may wait, so that the run answers within the host's limit.

A hook run keeps a budget from its start (``relay.HOOK_BUDGET_SECONDS``). One that does the
work itself after waiting for a relay that did not answer gives the store only what is left
of it, not a fresh ``[store] operation_timeout_seconds`` on top; and that is the deadline of
the whole run (``runtime_within_budget``), which every one of its store's waits shares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ..deadlines import call_deadline
from ..settings import Settings
from .relay import HOOK_BUDGET_SECONDS, seconds_left

if TYPE_CHECKING:
    from ..services.runtime import Runtime

# However little of the run's budget is left, the store gets this long to answer.
_STORE_SECONDS_AT_LEAST = 0.5


def within_what_is_left(settings: Settings) -> Settings:
    """``settings`` whose store waits no longer than what is left of the hook run's budget
    (after a relay that did not answer in time, say), so the run still answers the host
    within its limit: a store that does not answer by then is an outage, said in its words."""
    left = seconds_left()
    bound = settings.store.operation_timeout_seconds
    if left is None or left >= bound:
        return settings
    seconds = max(_STORE_SECONDS_AT_LEAST, left)
    store = settings.store.model_copy(
        update={
            "operation_timeout_seconds": seconds,
            "statement_timeout_seconds": min(settings.store.statement_timeout_seconds, seconds * 0.8),
        }
    )
    return dataclasses.replace(settings, store=store)


@asynccontextmanager
async def runtime_within_budget(settings: Settings) -> AsyncIterator[Runtime]:
    """The hook run's runtime (its store bounded as a hook's), opened and used within what is
    left of the run's budget (all of it for a run that did not begin through the relay's
    client): every wait of its store shares that deadline, so however many operations the
    run makes, their sum ends within it."""
    from ..services.runtime import open_runtime  # noqa: PLC0415 (the services, once the store is needed)

    left = seconds_left()
    with call_deadline(HOOK_BUDGET_SECONDS if left is None else max(_STORE_SECONDS_AT_LEAST, left)):
        async with open_runtime(settings, bounded=True) as rt:
            yield rt
