"""What a hook run's store may wait, so that the run answers within the host's limit.

A hook run keeps a budget from its start (``relay.HOOK_BUDGET_SECONDS``). One that does the
work itself after waiting for a relay that did not answer gives the store only what is left
of it, not a fresh ``[store] operation_timeout_seconds`` on top.
"""

from __future__ import annotations

import dataclasses

from ..settings import Settings
from .relay import seconds_left

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
