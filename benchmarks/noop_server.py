"""The baseline: a minimal ``MCPServer`` with one no-op tool, served over stdio.

The benchmarks compare ``mcp-server-escalation`` against this server, run by the same
interpreter and the same SDK, so the ratios measure what our code adds on top of the SDK
(imports, tool wiring, the store), not the SDK or the machine.

With ``--loop-transport`` the same server is served by our stdio transport
(``adapters/stdio/transport.py``) instead of the SDK's: ``bench_stdio.py`` runs it as a second
baseline, so its tables also show what our tools cost on the same transport.

    python benchmarks/noop_server.py [--loop-transport]
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
    import sys

    if "--loop-transport" in sys.argv[1:]:
        from mcp_server_escalation.adapters.stdio.transport import run_stdio

        run_stdio(mcp)
    else:
        mcp.run()
