"""What the lifespan hands to every request, and the runtimes a server has open."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...services.runtime import Runtime
from ...settings import Settings
from .holders import TaskHolders


@dataclass
class AppContext:
    """What the lifespan yields to every tool call."""

    runtime: Runtime
    settings: Settings
    holders: TaskHolders = field(default_factory=TaskHolders)


@dataclass
class LiveRuntimes:
    """The runtimes of one server's open sessions (one on stdio; one per in-memory client).

    Only for the SDK's static resources, which get no Context: every runtime of a server
    points at the same store, so any live one answers the same.
    """

    open: list[Runtime] = field(default_factory=list)

    def current(self) -> Runtime:
        """The most recently opened live runtime."""
        if not self.open:
            raise RuntimeError("no session of this server is open")
        return self.open[-1]
