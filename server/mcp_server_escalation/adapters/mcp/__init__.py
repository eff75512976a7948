"""The MCP surface: tools, resources and prompts, elicitation and client notifications.

What a request reads from its session is in ``context``; the tools' JSON Schemas are
generated from their models by ``schemas`` (``python -m
mcp_server_escalation.adapters.mcp.schemas``).
"""
