"""The console's live streams (``/events``): a bounded number of streams per session, and
none outliving its session.

The console runs in a thread of this process (the server ``console`` builds). That the
streams share one reader is measured by ``benchmarks/bench_console_streams.py`` (the
console's CPU with one stream and with hundreds).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx2
import pytest

from console_support import RunningConsole, console_in_thread, logged_in
from http_support import OPERATOR_TOKEN
from mcp_server_escalation.adapters.console.live import STREAMS_PER_SESSION


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-streams")) as running:
        yield running


def open_streams(stack: ExitStack, client: httpx2.Client, count: int) -> list[httpx2.Response]:
    """``count`` live streams held open on ``client`` until ``stack`` closes."""
    opened = [stack.enter_context(client.stream("GET", "/events")) for _ in range(count)]
    assert [stream.status_code for stream in opened] == [200] * count
    return opened


def test_a_session_holds_a_bounded_number_of_streams(console: RunningConsole) -> None:
    with ExitStack() as stack:
        operator = stack.enter_context(logged_in(console))
        open_streams(stack, operator, STREAMS_PER_SESSION)
        with operator.stream("GET", "/events") as one_more:
            assert one_more.status_code == 429
            assert "live" in one_more.read().decode()
        other = stack.enter_context(logged_in(console))  # another session is not held back
        open_streams(stack, other, 1)
    with logged_in(console) as operator, ExitStack() as stack:
        open_streams(stack, operator, STREAMS_PER_SESSION)  # closed streams free their place


def test_logging_out_ends_the_sessions_streams(console: RunningConsole) -> None:
    with logged_in(console) as operator:
        csrf = _csrf(operator.get("/").text)
        with operator.stream("GET", "/events", timeout=10) as stream:
            lines = stream.iter_lines()
            assert next(lines).startswith("retry:")
            assert operator.post("/logout", data={"csrf": csrf}).status_code == 303
            started = time.monotonic()
            rest = list(lines)  # ends when the server closes the stream (else: read timeout)
        assert time.monotonic() - started < 5
        assert not [line for line in rest if line.startswith("event:")]
        assert operator.get("/events").status_code == 401


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]*)"', page)
    assert found, page
    return found.group(1)


def test_a_stream_ends_when_its_session_is_gone(tmp_path: Path) -> None:
    """A session dropped without a logout (the oldest of too many) ends its streams too."""
    from mcp_server_escalation.adapters.console.sessions import SESSIONS_MAX

    with console_in_thread(tmp_path) as fresh, logged_in(fresh) as first:
        with first.stream("GET", "/events", timeout=15) as stream:
            lines = stream.iter_lines()
            assert next(lines).startswith("retry:")
            with logged_in(fresh) as another:  # one client logging in again and again
                for _ in range(SESSIONS_MAX - 1):
                    another.cookies.clear()
                    assert another.post("/login", data={"token": OPERATOR_TOKEN}).status_code == 303
            list(lines)  # the server ends it: the next keep-alive finds the session gone
        assert first.get("/events").status_code == 401
