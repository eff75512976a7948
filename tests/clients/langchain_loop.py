"""Run in the langchain-mcp-adapters environment (tests/client_envs.py): the agent's loop
(loop.py) through ``MultiServerMCPClient``'s tools in its default mode, a new session (a new
server process over stdio) per tool call, invoked as an agent's tool node invokes them (a
tool call in, a ``ToolMessage`` out); no model is called.

Usage: python langchain_loop.py SERVER_SCRIPT DB_PATH TASKS. Prints the steps as JSON.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from loop import Loop, Stopped, ToolError


async def main(script: str, db_path: str, tasks: int) -> None:
    client = MultiServerMCPClient(
        {"escalation": {"transport": "stdio", "command": script, "args": ["--db", db_path]}}
    )
    tools = {tool.name: tool for tool in await client.get_tools()}
    ids = itertools.count(1)

    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        request = {"name": tool, "args": arguments, "id": f"call_{next(ids)}", "type": "tool_call"}
        message = await tools[tool].ainvoke(request)
        if message.status == "error":
            raise ToolError(str(message.content))
        return message.artifact["structured_content"]

    loop = Loop(call, script, db_path)
    try:
        for number in range(tasks):
            await loop.run(f"langchain-{number}", "agent-7")
    except Stopped:
        pass
    sys.stdout.write(json.dumps({"steps": loop.steps}) + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
