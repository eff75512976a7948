"""The agent's loop, as an agent following every message the server gives would run it.

Shared by the client drivers of this folder, which run it in a client's own environment
(tests/client_envs.py) through that client's session objects: ``call(tool, arguments)``
returns a tool result's structured content, or raises what the client raised. Standard
library only: it runs beside any client's dependencies.

The loop: start a task, the same error three times (the escalation pauses the task), the
wait the pause message asks for, an operator's answer from the CLI in another process while
the agent waits as the next message asks, the acknowledgement, progress; then the agent asks
a question of its own and withdraws it, as far as the server lets it, doing what a refusal
says. Every step's result, refusal or error is kept, in order.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

# The next call a message spells out: get_escalation(7, wait_seconds=4, known_revision=2).
NEXT_WAIT = re.compile(r"get_escalation\((\d+), wait_seconds=(\d+)(?:, known_revision=(\d+))?\)")
MAX_POLLS = 30  # each as long as the message asks: a bound against a hang, never reached
ERROR = "TypeError: unsupported operand type(s) for +: 'int' and 'str'"


class ToolError(Exception):
    """The server answered a call with an error result (its text)."""


class Stopped(Exception):
    """A step failed: the client raised, or the server answered with an error."""


class Loop:
    """One run of the loop, step by step."""

    def __init__(self, call: Call, server_script: str, db_path: str) -> None:
        self._call = call
        self.server_script = server_script
        self.db_path = db_path
        self.steps: list[dict[str, Any]] = []

    async def step(self, tool: str, arguments: dict[str, Any], *, may_refuse: bool = False) -> dict[str, Any]:
        """One tool call, kept; a client's exception stops the loop, named, and so does an
        error result unless ``may_refuse`` (then it is kept as the refusal it is)."""
        try:
            result = await self._call(tool, arguments)
        except ToolError as refusal:
            if not may_refuse:
                self.steps.append({"tool": tool, "arguments": arguments, "raised": _named(refusal)})
                raise Stopped(tool) from refusal
            self.steps.append({"tool": tool, "arguments": arguments, "refused": str(refusal)})
            return {"refused": str(refusal)}
        except BaseException as exc:  # what the client raised is the finding
            self.steps.append({"tool": tool, "arguments": arguments, "raised": _named(exc)})
            raise Stopped(tool) from exc
        self.steps.append({"tool": tool, "arguments": arguments, "result": result})
        return result

    async def answer(self, escalation_id: int) -> asyncio.subprocess.Process:
        """The operator's answer, from the CLI in a process of its own (started, not awaited)."""
        return await asyncio.create_subprocess_exec(
            self.server_script, "--db", self.db_path,
            "escalations", "respond", str(escalation_id), "--guidance", "Cast the input with int() first",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    async def run(self, task_id: str, agent_id: str) -> None:
        """The whole loop for one task."""
        await self.step("start_task", {"title": "Fix the adder", "task_id": task_id, "agent_id": agent_id})
        failed: dict[str, Any] = {}
        for line in (3, 3, 3):
            failed = await self.step(
                "record_failure",
                {"task_id": task_id, "message": ERROR, "file": "src/calc/add.py", "line": line},
            )
        escalation = failed.get("escalation") or {}
        await self.follow(failed["message"], escalation.get("escalation_id"))
        await self.step("acknowledge_response", {"escalation_id": escalation.get("escalation_id")})
        await self.step(
            "report_progress",
            {"task_id": task_id, "files_modified": ["src/calc/add.py"], "tests_passed": 4,
             "tests_failed": 0, "outcome": "success"},
        )  # fmt: skip
        asked = await self.step(
            "raise_escalation", {"task_id": task_id, "reason": "Which rounding mode do totals use?"}
        )
        await self.withdraw((asked.get("escalation") or {}).get("escalation_id"), task_id, agent_id)

    async def withdraw(self, escalation_id: int | None, task_id: str, agent_id: str) -> None:
        """Withdraw the agent's own question as a model would: plainly first, then as the
        refusal, if any, says (name the agent_id, or call start_task first)."""
        arguments: dict[str, Any] = {"escalation_id": escalation_id, "response_type": "withdraw"}
        refused = (await self.step("resolve_escalation", arguments, may_refuse=True)).get("refused")
        if refused is None:
            return
        if "agent_id" in refused:
            await self.step("resolve_escalation", {**arguments, "agent_id": agent_id})
            return
        await self.step("start_task", {"title": "Fix the adder", "task_id": task_id, "agent_id": agent_id})
        await self.step("resolve_escalation", arguments)

    async def follow(self, message: str, escalation_id: int | None) -> None:
        """Wait as each message says until the escalation is answered; the operator answers
        from the CLI once the agent has waited once in vain."""
        operator: asyncio.subprocess.Process | None = None
        for _ in range(MAX_POLLS):
            asked = NEXT_WAIT.search(message)
            if asked is None:
                self.steps.append({"stopped": f"no wait asked for in: {message}"})
                raise Stopped("follow")
            arguments: dict[str, Any] = {"escalation_id": int(asked[1]), "wait_seconds": int(asked[2])}
            if asked[3] is not None:
                arguments["known_revision"] = int(asked[3])
            polled = await self.step("get_escalation", arguments)
            if polled.get("status") != "pending":
                break
            if operator is None and escalation_id is not None:
                operator = await self.answer(escalation_id)  # while the next wait runs
            message = polled["message"]
        if operator is not None:
            _, err = await operator.communicate()
            self.steps.append({"operator": operator.returncode, "stderr": err.decode()[-2000:]})


def _named(exc: BaseException) -> str:
    """An exception as a person reads it, groups unwrapped: ``Type: message``."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_named(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"
