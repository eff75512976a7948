"""What the model is shown of the tool list: its size, per tool and in all (issue 14).

A host hands the model every tool's name, description and input schema on every turn.
This script lists the tools of the installed console script over stdio (the SDK client,
handshake era, as hosts speak) and prints the size of that list per tool and in all.

Tokens are estimated, not counted: no tokenizer is installed here, and the common ones
need their vocabulary downloaded. The estimate is the characters of the list as JSON
(``json.dumps`` with its default separators) divided by four, rounded up; the same measure
gave the ~5,900 tokens issue 14 reported. Real tokenizers count JSON at roughly three to
four characters a token, so read it as a comparison between builds, not a bill. The target
is under 3,800; ``tests/test_tool_list.py`` asserts it on the same measure.

    python benchmarks/bench_tool_list.py
    python benchmarks/bench_tool_list.py --json tools.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

SERVER_SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
TOKEN_LIMIT = 3800


def approx_tokens(text: str) -> int:
    """Characters / 4, rounded up (see the module docstring)."""
    return math.ceil(len(text) / 4)


async def shown_tools(folder: Path) -> list[dict[str, Any]]:
    """Name, description and input schema of every tool, as listed over stdio."""
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", str(folder / "bench.db")])
    with (folder / "server.log").open("w", encoding="utf-8") as errlog:  # its start-up log, not ours
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:  # type: ignore[arg-type]
            listed = await client.list_tools()
    return [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in listed.tools
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--json", help="also write the figures as JSON to this file ('-' for stdout)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tools = anyio.run(shown_tools, Path(folder))
    per_tool = {t["name"]: approx_tokens(json.dumps(t)) for t in tools}
    total = approx_tokens(json.dumps(tools))
    refs = sorted(t["name"] for t in tools if '"$ref"' in json.dumps(t) or '"$defs"' in json.dumps(t))
    for name, tokens in sorted(per_tool.items(), key=lambda item: -item[1]):
        print(f"{name:22} {tokens:6}")
    everything = f"all {len(tools)} tools"
    print(f"{everything:22} {total:6}  (target < {TOKEN_LIMIT}; $ref/$defs in: {refs or 'none'})")
    if args.json:
        figures = json.dumps({"tokens": total, "per_tool": per_tool, "with_refs": refs}, indent=2)
        if args.json == "-":
            print(figures)
        else:
            Path(args.json).write_text(figures + "\n", encoding="utf-8")
    return 0 if total < TOKEN_LIMIT and not refs else 1


if __name__ == "__main__":
    sys.exit(main())
