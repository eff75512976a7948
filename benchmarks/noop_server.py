"""The baseline: a minimal ``MCPServer`` with one no-op tool, served over stdio.

The benchmarks compare ``mcp-server-escalation`` against this server, run by the same
interpreter and the same SDK, so the ratios measure what our code adds on top of the SDK
(imports, tool wiring, the store), not the SDK or the machine.

    python benchmarks/noop_server.py
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

mcp = MCPServer("noop-baseline")


class NoopResult(BaseModel):
    """A small structured result, like the real tools return."""

    ok: bool
    echo: str


@mcp.tool()
async def noop(text: str = "") -> NoopResult:
    """Do nothing and return a small pydantic model."""
    return NoopResult(ok=True, echo=text)


if __name__ == "__main__":
    mcp.run()
