"""Which tasks each connection holds: the agent identity the server can vouch for.

Agents are not authenticated one from another (over stdio there is no token at all, and
over HTTP every agent shares the agent token), and the ``agent_id`` an agent gives is only
its word. What the server does know is the connection a call arrives on: an agent holds a
task when it started, resumed or took it over with ``start_task`` on this connection, and
only while no other agent has taken the task over since (the task's generation is still
the one ``start_task`` gave). A withdrawal of a question by the agent role needs that.

The connection: on stdio the server process (a host starts one per agent session); an
in-memory client has its own lifespan too; over HTTP, where one lifespan serves every
client, the MCP session (``Mcp-Session-Id``, which the SDK checks belongs to the token
that opened it). A sessionless HTTP request holds nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

# What is remembered is bounded: HTTP sessions come and go without telling us. A forgotten
# holding costs the agent one start_task (the refusal says so), never a wrong answer.
HOLDERS_MAX = 1024
TASKS_PER_HOLDER_MAX = 256
STDIO_HOLDER = "stdio"


class TaskHolders:
    """Task id -> the generation it was held at, per connection (most recent kept)."""

    def __init__(self) -> None:
        self._held: OrderedDict[str, OrderedDict[str, int]] = OrderedDict()

    def hold(self, holder: str | None, task_id: str, generation: int) -> None:
        """``holder`` now holds ``task_id`` at ``generation`` (None: an unidentified caller)."""
        if holder is None:
            return
        tasks = self._held.pop(holder, OrderedDict())
        tasks.pop(task_id, None)
        tasks[task_id] = generation
        while len(tasks) > TASKS_PER_HOLDER_MAX:
            tasks.popitem(last=False)
        self._held[holder] = tasks
        while len(self._held) > HOLDERS_MAX:
            self._held.popitem(last=False)

    def held(self, holder: str | None) -> Mapping[str, int] | None:
        """The tasks ``holder`` holds, with the generation each was held at (None: no holder)."""
        if holder is None:
            return None
        return dict(self._held.get(holder, {}))
