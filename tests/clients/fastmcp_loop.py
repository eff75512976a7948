"""Run in a fastmcp environment (tests/client_envs.py): the agent's loop (loop.py) through
fastmcp's ``Client`` over stdio with its default settings, calling tools as its users do
(``client.call_tool``); no model is called.

With ``--tasks`` (the ``fastmcp-tasks`` environment): ``fastmcp_tasks`` is imported, which is
what turns on the client's side of the MCP tasks extension, and the wait each pause message
asks for is taken as a task (``call_tool_task``): the call returns a handle at once, the
operator answers from the CLI in another process, and the handle's ``result()`` polls
``tasks/get`` until the human's answer arrives or the wait it asked for ends (then the next
task waits again).

Usage: python fastmcp_loop.py SERVER_SCRIPT DB_PATH TASKS [--tasks]. Prints the steps as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from loop import NEXT_WAIT, Loop, Stopped, ToolError, _named

MORE_WAITS = 10  # tasks after the first, each as long as the wait the message asked for


class TaskLoop(Loop):
    """The loop, with the wait for the human taken as an MCP task."""

    def __init__(self, client: Client[Any], *args: Any) -> None:
        super().__init__(*args)
        self.client = client

    async def follow(self, message: str, escalation_id: int | None) -> None:
        from fastmcp_tasks import call_tool_task

        asked = NEXT_WAIT.search(message)
        if asked is None or escalation_id is None:
            self.steps.append({"stopped": f"no wait asked for in: {message}"})
            raise Stopped("follow")
        arguments: dict[str, Any] = {"escalation_id": int(asked[1]), "wait_seconds": int(asked[2])}
        step: dict[str, Any] = {"tool": "get_escalation", "arguments": arguments}
        self.steps.append(step)
        try:
            task = await call_tool_task(self.client, "get_escalation", arguments)
            step["task"] = {"id": task.task_id, "first": (await task.status()).status}
            operator = await self.answer(escalation_id)  # while the task waits
            finished = await task.result()
            # A task ends with the wait it was asked for: an answer slower than that is
            # waited for by the next task, as the pending result's message asks.
            for _ in range(MORE_WAITS):
                if finished.structured_content.get("status") != "pending":
                    break
                task = await call_tool_task(self.client, "get_escalation", arguments)
                finished = await task.result()
        except BaseException as exc:  # what the client raised is the finding
            step["raised"] = _named(exc)
            raise Stopped("follow") from exc
        step["task"]["last"] = (await task.status()).status
        step["result"] = finished.structured_content
        _, err = await operator.communicate()
        self.steps.append({"operator": operator.returncode, "stderr": err.decode()[-2000:]})


async def main(script: str, db_path: str, tasks: int, as_tasks: bool) -> None:
    if as_tasks:
        import fastmcp_tasks  # noqa: F401 (registers the client's tasks extension)
    client: Client[Any] = Client(StdioTransport(command=script, args=["--db", db_path]))
    async with client:

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            if result.is_error:
                raise ToolError(text)
            structured = result.structured_content
            return structured if isinstance(structured, dict) else json.loads(text)

        loop = TaskLoop(client, call, script, db_path) if as_tasks else Loop(call, script, db_path)
        try:
            for number in range(tasks):
                await loop.run(f"fastmcp-{number}", "agent-7")
        except Stopped:
            pass
        version = client.session.protocol_version if hasattr(client.session, "protocol_version") else None
    sys.stdout.write(json.dumps({"protocol": version, "steps": loop.steps}) + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), "--tasks" in sys.argv[4:]))
