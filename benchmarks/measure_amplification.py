"""Amplification (issue 16): how many bytes a few large but accepted calls make the server
store, return and send. Not a timing.

The attack run's two scenarios, in process (the real server, the SDK client in memory, a
temp store) and with a notify command that keeps what it is sent:

1. Twenty ``report_progress`` calls with the largest arguments the server accepts (500 paths
   as long as the limits allow, a 64 Ki-character note), then a ``check_edit`` outside the
   scope: the size of its result, of ``get_escalation`` and of the notification.
2. One ``raise_escalation`` with 500 options of 64 KiB: the size stored and returned, or the
   error, and then the largest options the server accepts.

    python benchmarks/measure_amplification.py            # a table
    python benchmarks/measure_amplification.py --json -   # the figures as JSON

Run it against another version of the package (``PYTHONPATH=../other/server``) to compare.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.models import limits
from mcp_server_escalation.settings import NotifyConfig, Settings

NEVER = 1_000_000
QUIET = {
    "files_modified_exceeds": NEVER,
    "total_verification_attempts": NEVER,
    "no_file_changes_after_attempts": NEVER,
    "no_test_improvement_after": NEVER,
}


def _bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _paths(tag: str) -> list[str]:
    """500 paths as long as one call may send: 4 KiB each, or the list's total limit."""
    total = getattr(limits, "LIST_TEXT_MAX", None)
    each = min(limits.PATH_MAX, total // limits.LIST_MAX) if total else limits.PATH_MAX
    return [f"src/{tag}/{n:03d}/".ljust(each, "p") for n in range(limits.LIST_MAX)]


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any] | None, str]:
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    return (None if result.is_error else result.structured_content), text


async def measure(workdir: Path) -> dict[str, Any]:
    """Both scenarios on a fresh store in ``workdir``."""
    inbox = workdir / "inbox"
    inbox.mkdir()
    db = str(workdir / "escalations.db")
    notify = NotifyConfig(command=f'cat > "{inbox}/$ESCALATION_ID.json"')
    figures: dict[str, Any] = {}
    server = build_server(Settings(db_path=db, project_root="/work/project", notify=notify))
    async with Client(server, mode="legacy") as client:  # type: ignore[arg-type]
        await _call(client, "start_task", title="big", task_id="big", scope=["src/**"], thresholds=QUIET)
        for n in range(20):
            done, text = await _call(
                client, "report_progress", task_id="big", files_modified=_paths(str(n)), note="n" * 65536
            )
            if done is None:
                raise SystemExit(f"report_progress refused: {text[:300]}")
        refused, text = await _call(client, "check_edit", task_id="big", paths=["docs/readme.md"])
        assert refused is not None, text
        escalation_id = refused["holding"]["escalation_id"]
        read, _ = await _call(client, "get_escalation", escalation_id=escalation_id)
        figures["path_chars_per_call"] = sum(map(len, _paths("0")))
        figures["check_edit_result_bytes"] = _bytes(refused)
        figures["get_escalation_result_bytes"] = _bytes(read)
        sent = inbox / f"{escalation_id}.json"
        with anyio.fail_after(30):
            while not (sent.exists() and _complete(sent)):  # noqa: ASYNC110 (a file another process writes)
                await anyio.sleep(0.05)
        figures["notification_bytes"] = sent.stat().st_size

        await _call(client, "start_task", title="ask", task_id="ask")
        ask = {"task_id": "ask", "reason": "Which?", "blocking": False}
        asked, text = await _call(client, "raise_escalation", **ask, options=["o" * 65536] * 500)
        refused = f"refused: {' '.join(text.split())[:120]}"
        figures["options_500x64KiB"] = f"returned {_bytes(asked):,} bytes" if asked else refused
        count = getattr(limits, "OPTIONS_MAX", 500)
        per = getattr(limits, "OPTIONS_TOTAL_MAX", 500 * 65536) // count
        largest, _ = await _call(client, "raise_escalation", **ask, options=["o" * per] * count)
        figures["largest_options_result_bytes"] = _bytes(largest)
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT max(length(options_json)) FROM escalations").fetchone()
        (context,) = conn.execute("SELECT max(length(context_json)) FROM escalations").fetchone()
    figures["largest_options_stored_bytes"] = stored
    figures["largest_context_stored_bytes"] = context
    return figures


def _complete(path: Path) -> bool:
    try:
        json.loads(path.read_bytes())
    except ValueError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON ('-': stdout)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        figures = anyio.run(measure, Path(workdir))
    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
        return
    for name, value in figures.items():
        sys.stdout.write(f"{name:32} {value:,}\n" if isinstance(value, int) else f"{name:32} {value}\n")


if __name__ == "__main__":
    main()
