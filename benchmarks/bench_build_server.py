"""A/B in one run: building a server, with its resource templates built anew each time (A,
the SDK's ``server.resource`` decorator) or built once and added (B, ``register_resources``).

Every in-memory test session builds a server, and a served process builds one, so what a
build costs is paid ~1,000 times a run of the suite. Blocks of A and B alternate, so drift on
the machine affects both alike; medians of CPU time per build are printed, and their ratio.

    python benchmarks/bench_build_server.py [--rounds 20] [--block 50]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.adapters.mcp import surfaces
from mcp_server_escalation.adapters.mcp.context import LiveRuntimes
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.settings import Settings


def templates_built_anew(server: MCPServer, prompts: PromptBook) -> None:
    """A: each template built from its function by the SDK, as ``server.resource`` does."""
    texts = prompts.resources
    for uri, (fn, mime_type) in surfaces.TEMPLATES.items():
        server.resource(uri, mime_type=mime_type, description=texts[uri].description)(fn)


def templates_built_once(server: MCPServer, prompts: PromptBook) -> None:
    """B: what ``build_server`` does."""
    surfaces.register_resources(server, prompts, LiveRuntimes())


def block_ms(register: object, prompts: PromptBook, count: int) -> float:
    started = time.process_time()
    for _ in range(count):
        register(MCPServer("bench"), prompts)  # type: ignore[operator]
    return (time.process_time() - started) * 1000 / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args()
    prompts = PromptBook.load(data_dir("prompts"))
    settings = Settings(db_path=str(Path(tempfile.mkdtemp()) / "escalations.db"))
    for _ in range(20):  # warm-up: imports, the first build's lazy work
        build_server(settings)
        templates_built_anew(MCPServer("warm"), prompts)
    gc.freeze()
    anew, once, whole = [], [], []
    for _ in range(args.rounds):
        anew.append(block_ms(templates_built_anew, prompts, args.block))
        once.append(block_ms(templates_built_once, prompts, args.block))
        started = time.process_time()
        for _ in range(args.block):
            build_server(settings)
        whole.append((time.process_time() - started) * 1000 / args.block)
    a, b = statistics.median(anew), statistics.median(once)
    print(f"resource templates per server: A built anew {a:.2f} ms, B built once {b:.2f} ms")
    print(f"B/A {b / a:.2f}x")
    print(f"build_server (B, as served): {statistics.median(whole):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
