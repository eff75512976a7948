"""Slow clients on loopback cannot take the HTTP port: unfinished requests are bounded in
time, connections are capped with a clear refusal and one log line per episode, and
clients that send their requests at once are served while the cap holds.

Real sockets on 127.0.0.1, a cap of 12 and limits of a second or two (what 1,100
connections at a 1,024-descriptor limit did is the same with a small cap); every wait is
bounded.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import httpx2
import pytest

from hooks_support import PYTEST_FAIL, bash_failure
from http_support import AGENT_TOKEN, http_client, http_in_thread
from mcp_server_escalation.adapters.http import connections
from mcp_server_escalation.adapters.http.connections import ConnectionLimits

CAP = 12
SLOW = 30  # more slow clients than the cap
LIMITS = ConnectionLimits(connections=CAP, header_seconds=1.0, request_seconds=2.0)
CAP_LINE = "connections, the cap"
OVER_LINE = "back under the cap"


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(connections, "LIMITS", LIMITS)
    with http_in_thread(tmp_path) as port:
        yield port


def slow_client(port: int, request: bytes) -> socket.socket:
    """A connection that sends ``request`` (headers unfinished, or a body cut short) and stops."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(request)
    return conn


def closed_by_server(conn: socket.socket) -> bytes:
    """What the server said before it closed ``conn`` (waits at most 10 s for the close)."""
    received = b""
    try:
        while chunk := conn.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def lines(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in record.getMessage() for record in caplog.records)


async def served_at_once(port: int, tmp_path: Path) -> None:
    """An agent over MCP, a hook event and the console's login page, all answered."""
    async with http_client(f"http://127.0.0.1:{port}/mcp", AGENT_TOKEN) as agent:
        started = await agent.call("start_task", title="served", task_id=f"t-{time.monotonic_ns()}")
        assert started["task"]["status"] == "active"
    event = {
        **bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_{time.monotonic_ns()}"),
        "cwd": str(tmp_path),
    }
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=10) as http:
        hooked = await http.post(
            f"http://127.0.0.1:{port}/hooks/claude-code", content=json.dumps(event), headers=headers
        )
        console = await http.get(f"http://127.0.0.1:{port}/login")
    assert hooked.status_code == 200, hooked.text
    assert console.status_code == 200


async def test_clients_that_never_finish_their_headers_are_closed_and_others_served_meanwhile(
    served: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    partial = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    with anyio.fail_after(60):
        # All opened in one go: one by one, under load, the first ones' header time ran out
        # before the last were open, and the episode ended and began again on the way.
        slow = await anyio.to_thread.run_sync(lambda: [slow_client(served, partial) for _ in range(SLOW)])
        try:
            await served_at_once(served, tmp_path)  # while slow clients hold the cap
            said = [await anyio.to_thread.run_sync(closed_by_server, conn) for conn in slow]
        finally:
            for conn in slow:
                conn.close()
        # Each was closed: the oldest to make room for newer ones, the rest when their
        # headers were late, with a 408.
        assert all(answer in (b"", *[a for a in said if a.startswith(b"HTTP/1.1 408")]) for answer in said)
        assert any(answer.startswith(b"HTTP/1.1 408") for answer in said)
        while lines(caplog, OVER_LINE) < lines(caplog, CAP_LINE):
            await anyio.sleep(0.05)
    # One episode (two, where a loaded machine let the first slow clients time out before the
    # last were open): a line as it begins and one as it ends, nothing per connection.
    episodes = lines(caplog, CAP_LINE)
    assert 1 <= episodes <= 2
    assert lines(caplog, OVER_LINE) == episodes
    assert len(caplog.records) == 2 * episodes


async def test_when_every_connection_is_mid_request_a_new_one_is_refused_with_503_until_they_end(
    served: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    # Requests with a token whose bodies stop half-way: in the middle of a request, so
    # they are not closed to make room; the request time limit ends them.
    cut_short = (
        f"POST /hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1:{served}\r\n"
        f"Authorization: Bearer {AGENT_TOKEN}\r\n"
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"hook_event_name":'
    ).encode()
    with anyio.fail_after(60):
        busy = [await anyio.to_thread.run_sync(slow_client, served, cut_short) for _ in range(CAP)]
        await anyio.sleep(0.5)  # for the server to read their headers (well within the 2 s)
        try:
            refused = await anyio.to_thread.run_sync(slow_client, served, b"")
            busy.append(refused)  # closed with them
            answer = await anyio.to_thread.run_sync(closed_by_server, refused)
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable")
            assert b"retry-after: 5" in answer
            assert b"too many connections" in answer
            ended = [await anyio.to_thread.run_sync(closed_by_server, conn) for conn in busy]
        finally:
            for conn in busy:
                conn.close()
        assert ended == [b""] * (CAP + 1)  # closed once their time was up (the 503 was read above)
        await served_at_once(served, tmp_path)  # and served again
        while lines(caplog, OVER_LINE) == 0:
            await anyio.sleep(0.05)
    assert lines(caplog, CAP_LINE) == 1


class _Waiting:
    """A connection between requests, as ``Guard`` sees it, that closes when told to (and
    leaves, as a transport does, only later)."""

    def __init__(self) -> None:
        self.closing = False

    def between_requests(self) -> bool:
        return not self.closing

    def close_for_room(self) -> None:
        self.closing = True


def test_connections_accepted_in_one_batch_each_make_room_of_their_own() -> None:
    # asyncio accepts a batch of connections before any of them is admitted, and a closed
    # one leaves a turn of the loop later: each admission made room by closing the same
    # oldest connection, and the descriptors ran out.
    guard = connections.Guard(ConnectionLimits(connections=CAP))
    held = [_Waiting() for _ in range(CAP)]
    for connection in held:
        assert guard.admit(connection)  # type: ignore[arg-type]
    batch = [_Waiting() for _ in range(CAP // 2)]
    for connection in batch:
        assert guard.admit(connection)  # type: ignore[arg-type]
    assert len(guard.open) == CAP
    assert [c.closing for c in held] == [True] * (CAP // 2) + [False] * (CAP - CAP // 2)
