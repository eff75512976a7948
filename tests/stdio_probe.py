"""A tiny server served through ``adapters.stdio.transport.serve_stdio``, for tests/test_stdio_transport.py.

It reports which transport its start-up chose, and its ``stray`` tool writes to stdout
four ways while serving (``print`` flushed and not, a raw write to fd 1, a child process),
all of which must miss the protocol.

    python tests/stdio_probe.py
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from mcp_server_escalation.adapters.stdio.transport import loop_transport_refusal, serve_stdio


class Probe(BaseModel):
    refusal: str | None
    echo: str


def main() -> None:
    # Decided on the streams the process was started with, as open_stdio() decides.
    refusal = loop_transport_refusal()
    server = MCPServer("stdio-probe")

    @server.tool()
    async def probe(text: str = "") -> Probe:
        """Which transport serves, and the text back."""
        return Probe(refusal=refusal, echo=text)

    @server.tool()
    async def stray(text: str) -> Probe:
        """Write ``text`` to stdout four ways, then answer."""
        print(f"print {text}", flush=True)  # noqa: T201 (the stray output under test)
        print(f"buffered {text}")  # noqa: T201 (flushed only at exit, unless we flush it)
        os.write(1, f"fd1 {text}\n".encode())
        await anyio.run_process([sys.executable, "-c", f"print('child {text}')"], stdout=None)
        return Probe(refusal=refusal, echo=text)

    anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
