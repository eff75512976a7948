"""Run in a fastmcp environment (tests/client_envs.py): one plain wait for a human who does
not answer, as every pause message asks for it, through fastmcp's ``Client`` over stdio
with its default settings (``client.call_tool``); no model is called.

With ``--tasks`` (the ``fastmcp-tasks`` environment): ``fastmcp_tasks`` is imported, which
declares the tasks extension on every call, so the server may take the plain call as a task;
the client then polls ``tasks/get`` by itself until the task completes.

Usage: python fastmcp_wait.py SERVER_SCRIPT DB_PATH WAIT_SECONDS [--tasks]. Prints, as JSON,
how long the call took and what it returned; a call still running after BOUND seconds is
given up, and the JSON says so.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

BOUND = 60.0  # far past any wait the server is asked for: a call still running then hangs


async def main(script: str, db_path: str, wait_seconds: float) -> None:
    client: Client[Any] = Client(StdioTransport(command=script, args=["--db", db_path]))
    async with client:
        started = await client.call_tool("start_task", {"title": "Fix the adder"})
        task_id = started.structured_content["task_id"]
        raised = await client.call_tool(
            "raise_escalation", {"task_id": task_id, "reason": "Which way?", "question": "A or B?"}
        )
        escalation_id = raised.structured_content["escalation"]["escalation_id"]
        arguments = {"escalation_id": escalation_id, "wait_seconds": wait_seconds}
        began = time.monotonic()
        try:
            waited = await asyncio.wait_for(client.call_tool("get_escalation", arguments), BOUND)
        except TimeoutError:
            seen: dict[str, Any] = {"hung": True, "seconds": time.monotonic() - began}
        else:
            seen = {"hung": False, "seconds": time.monotonic() - began, "result": waited.structured_content}
        seen["raised_message"] = raised.structured_content["message"]
    sys.stdout.write(json.dumps(seen) + "\n")


if __name__ == "__main__":
    if "--tasks" in sys.argv[4:]:
        import fastmcp_tasks  # noqa: F401 (registers the client's tasks extension)
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
