"""Waking an idle agent with the operator's answer (Claude Code's ``asyncRewake`` Stop hook).

A Stop hook marked ``asyncRewake`` runs in the background after the agent's turn ended, and
when it exits with status 2 Claude Code wakes the model with what the hook wrote on stderr
(in a system reminder). ``hook claude-code --wake-minutes N`` is that hook: when the turn
ended while a blocking escalation waits, it waits for the answer (looking at the store as a
waiting ``get_escalation`` does) for at most N minutes, then delivers the answer as the Stop
hook does, acknowledged on the agent's behalf. Nothing waiting, or no answer in time: it
exits 0 and the session stays as it is.
"""

from __future__ import annotations

import anyio

from ..models.hook_config import HooksConfig
from ..models.limits import ENDED_STATUSES
from ..services import hooks as hook_service
from ..services.runtime import Runtime
from .runner import Call, answered
from .triage import Triaged

# As often as a waiting get_escalation looks at the store for an answer another process wrote.
POLL_SECONDS = 0.2


async def wait_for_answer(rt: Runtime, triaged: Triaged, cfg: HooksConfig, minutes: float) -> str | None:
    """The words that wake the model with the operator's answer, once one is given within
    ``minutes``; None when nothing waits for an answer, or none came in time."""
    call = Call(rt, triaged, cfg)
    task = await call.task(create=False)
    if task is None:
        return None
    deadline = anyio.current_time() + minutes * 60
    while True:
        state = await hook_service.hook_state(rt, task.task_id)
        holding = state.holding
        if state.task.status in ENDED_STATUSES or holding is None:
            return None
        if holding.response is not None:
            woken = await answered(call, state.task, holding, stop=True)
            return woken.block or woken.halt
        if anyio.current_time() >= deadline:
            return None
        await anyio.sleep(POLL_SECONDS)
