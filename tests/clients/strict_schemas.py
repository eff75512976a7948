"""Run in the openai-agents environment (tests/client_envs.py): every tool of the server as
openai-agents makes it a function tool with ``convert_schemas_to_strict=True``.

Usage: python strict_schemas.py SERVER_SCRIPT DB_PATH. Prints, per tool, whether the
conversion to OpenAI's strict mode succeeded (openai-agents falls back to a non-strict tool,
with only a log line, when it does not) and the schema the model would be given.
"""

from __future__ import annotations

import asyncio
import json
import sys

from agents.mcp import MCPServerStdio, MCPUtil


async def main(script: str, db_path: str) -> None:
    params = {"command": script, "args": ["--db", db_path]}
    async with MCPServerStdio(params=params) as server:  # the library's defaults otherwise
        tools = await server.list_tools()
        converted = {}
        for tool in tools:
            function_tool = MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=True)
            converted[tool.name] = {
                "strict": function_tool.strict_json_schema,
                "schema": function_tool.params_json_schema,
            }
    sys.stdout.write(json.dumps(converted) + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
