"""Run in the openai-agents environment (tests/client_envs.py): the agent's loop (loop.py)
through ``MCPServerStdio`` with the library's default settings (a 5 s request timeout, no
retries), calling tools as its function tools do (``server.call_tool``); no model is called.

Usage: python agents_loop.py SERVER_SCRIPT DB_PATH TASKS. Prints the steps as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents.mcp import MCPServerStdio
from loop import Loop, Stopped, ToolError


async def main(script: str, db_path: str, tasks: int) -> None:
    server = MCPServerStdio(params={"command": script, "args": ["--db", db_path]})
    async with server:
        await server.list_tools()  # as an agent run does before its first call

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await server.call_tool(tool, arguments)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            if result.is_error:  # mcp 2.x's names (PINS in tests/client_envs.py)
                raise ToolError(text)
            structured = result.structured_content
            return structured if isinstance(structured, dict) else json.loads(text)

        loop = Loop(call, script, db_path)
        try:
            for number in range(tasks):
                await loop.run(f"agents-{number}", "agent-7")
        except Stopped:
            pass
    seen = {"timeout": server.client_session_timeout_seconds, "steps": loop.steps}
    sys.stdout.write(json.dumps(seen) + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
