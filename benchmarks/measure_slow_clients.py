"""Slow clients against ``serve --transport http``: is the port still served? Not a timing.

The attack run's scenario, on loopback: the installed console script serves HTTP with a
limit of ``--files`` (1,024) open files; ``--slow`` (1,100) connections send part of their
headers and stop. While they are open, an authenticated agent calls a tool over ``/mcp``, a
hook event is posted and the console's login page is fetched, each with a 30 s limit; then
the slow connections are watched for ``--watch`` seconds. It reports what each client got
and how long it took, how many slow connections the server closed, and the server's log
lines (stderr) in all.

    python benchmarks/measure_slow_clients.py                 # a table
    python benchmarks/measure_slow_clients.py --json -        # the figures as JSON

Run it against another version of the package (its console script first on ``PATH``) to
compare.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

AGENT_TOKEN = "agent-" + "a" * 40
OPERATOR_TOKEN = "operator-" + "o" * 40
PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
MCP_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "slow", "version": "1"},
    },
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.1)
        else:
            return True
    return False


def _timed(name: str, request: Any) -> dict[str, Any]:
    start = time.monotonic()
    try:
        response = request()
        said: str = f"{response.status_code}"
    except httpx2.HTTPError as exc:
        said = f"no answer ({type(exc).__name__})"
    return {"client": name, "answer": said, "seconds": round(time.monotonic() - start, 2)}


def _served(port: int, folder: Path) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}"
    agent = {
        "Authorization": f"Bearer {AGENT_TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    event = {
        "hook_event_name": "PostToolUseFailure",
        "session_id": "s",
        "cwd": str(folder),
        "tool_name": "Bash",
        "tool_use_id": "toolu_slow",
        "tool_input": {"command": "make"},
        "error": "Exit code 2\nmake: *** [all] Error 2",
    }
    with httpx2.Client(timeout=30) as http:
        return [
            _timed(
                "agent over /mcp (initialize)", lambda: http.post(f"{url}/mcp", json=MCP_CALL, headers=agent)
            ),
            _timed("hook event", lambda: http.post(f"{url}/hooks/claude-code", json=event, headers=agent)),
            _timed("console login page", lambda: http.get(f"{url}/login")),
        ]


def _closed(conn: socket.socket) -> bool:
    try:
        conn.recv(4096, socket.MSG_DONTWAIT)  # the end, or a 408 before it
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def measure(slow: int, files: int, watch: float, keep_log: str | None = None) -> dict[str, Any]:
    script = shutil.which("mcp-server-escalation")
    if script is None:
        raise SystemExit("the console script mcp-server-escalation is not on PATH")
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log = folder / "serve.log"
        env = {
            **os.environ,
            "ESCALATION_AGENT_TOKEN": AGENT_TOKEN,
            "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN,
        }
        command = [script, "serve", "--transport", "http", "--port", str(port), "--db", str(folder / "s.db")]
        with log.open("wb") as stderr:
            server = subprocess.Popen(
                command,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (files, files))  # before it listens
        try:
            if not _listening(port, 30):
                raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")
            opened = []
            for _ in range(slow):
                try:
                    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                    conn.sendall(PARTIAL)
                    opened.append(conn)
                except OSError:
                    break
            lines_before = len(log.read_text(errors="replace").splitlines())
            answers = _served(port, folder)
            time.sleep(watch)
            closed = sum(_closed(conn) for conn in opened)
            for conn in opened:
                conn.close()
            time.sleep(2)
            lines = log.read_text(errors="replace").splitlines()
            if keep_log:
                shutil.copy(log, keep_log)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "slow_connections_opened": len(opened),
        "open_files_limit": files,
        "answers_while_held": answers,
        f"slow_connections_closed_by_the_server_within_{watch:g}_s": closed,
        "server_log_lines": len(lines),
        "server_log_lines_while_held": len(lines) - lines_before,
        "server_log_sample": lines[-4:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slow", type=int, default=1100, help="slow connections")
    parser.add_argument("--files", type=int, default=1024, help="the server's limit of open files")
    parser.add_argument("--watch", type=float, default=15.0, help="seconds to watch the slow connections")
    parser.add_argument("--log", help="keep the server's log (stderr) in this file")
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    args = parser.parse_args()
    figures = measure(args.slow, args.files, args.watch, args.log)
    for key, value in figures.items():
        if key == "answers_while_held":
            for answer in value:
                print(f"  {answer['client']:<32} {answer['answer']:<28} {answer['seconds']:>6} s")
        elif key != "server_log_sample":
            print(f"{key:<56} {value}")
    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
