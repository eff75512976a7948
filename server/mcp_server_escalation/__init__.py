"""mcp-server-escalation: objective escalation for MCP coding agents."""

__version__ = "0.1.0"
