"""The agent tools: flat typed arguments, one service call, a pydantic result.

The signature is the schema: limits and enums live in the annotations, so a bad argument
is reported by field name before any service runs. Each tool function takes its
``ToolCall`` first and calls its service; the registry (``adapters/mcp/registry.py``) hands it
the call and turns domain errors into tool errors (``isError``) whose text tells the model
how to fix the call. The tools live by concern, listed here in the order they are served.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool

from ....prompts import PromptBook
from ....settings import Settings
from ..context import AppContext
from ..registry import describe_tools, structured_tool
from . import escalations, failures, feedback, tasks
from .call import ToolCall

SERVED = (*tasks.TOOLS, *failures.TOOLS, *escalations.TOOLS, *feedback.TOOLS)


def build_tools(
    settings: Settings, prompts: PromptBook, *, http: bool = False, use_published: bool = True
) -> list[Tool]:
    """Every agent tool, described by ``prompts``, ready for ``MCPServer(tools=...)``."""
    role = settings.role

    def bind(context: Context[AppContext]) -> ToolCall:
        return ToolCall(context, role, http)

    tools = [
        structured_tool(
            served.fn,
            served.annotations,
            bind,
            use_published=use_published,
            text=served.text,
            prompts=prompts,
        )
        for served in SERVED
    ]
    describe_tools(tools, prompts)
    return tools
