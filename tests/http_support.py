"""A real streamable HTTP server for tests: started on a free port, stderr kept in a file."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import Agent

SCRIPT = str(Path(sys.executable).parent / "mcp-server-escalation")
AGENT_TOKEN = "agent-" + "a" * 40
OPERATOR_TOKEN = "operator-" + "o" * 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(
    tmp_path: Path, *options: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int, Path]:
    """A real HTTP server on a free port, its stderr kept in a file; once it listens."""
    port = free_port()
    env = env or {
        **os.environ,
        "ESCALATION_AGENT_TOKEN": AGENT_TOKEN,
        "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN,
    }
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [
                SCRIPT,
                "serve",
                "--transport",
                "http",
                "--port",
                str(port),
                "--db",
                str(tmp_path / "esc.db"),
                *options,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port, log
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)  # bounded wait for the listener to come up
    process.kill()
    pytest.fail(f"HTTP server did not start: {log.read_text()}")


def stop_http(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=10)


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str = "auto") -> AsyncIterator[Agent]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield Agent(client)
