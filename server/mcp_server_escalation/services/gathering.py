"""Who gathers each trigger's evidence: the gatherers by the name a trigger's record gives.

A trigger's record (``rules/triggers/records.py``) names the gatherer of its evidence; the
service that fires it registers that gatherer here under the name (``@gatherer("files")``)
and, where one step fires several kinds (``report_progress``, ``check_edit``), looks it up
by the record. A gatherer reads what the store holds for the trigger after the call's
writes, so its evidence shows them. ``tests/test_trigger_records.py`` names a record whose
gatherer is not registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .firing import Evidence

G = TypeVar("G", bound=Callable[..., Evidence])

# name -> the function that gathers that evidence (its arguments are its service's)
GATHERERS: dict[str, Callable[..., Evidence]] = {}


def gatherer(name: str) -> Callable[[G], G]:
    """Register the decorated function as the gatherer named ``name`` (once per name)."""

    def register(gather: G) -> G:
        if GATHERERS.setdefault(name, gather) is not gather:
            raise ValueError(f"two gatherers of the evidence {name!r}")
        return gather

    return register
