"""The loop transport of ``adapters/stdio/transport.py``: its choice, its line streams, real processes.

The line streams are tested on real OS pipes; the choice and the stream diversion in real
subprocesses launched the way MCP hosts launch servers (pipes for stdin and stdout), and
the fallback to the SDK's threaded transport with a regular file as stdin.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from conftest import INITIALIZE, INITIALIZED, start_task_request
from mcp_server_escalation.adapters.stdio.answers import Unanswered
from mcp_server_escalation.adapters.stdio.pipes import LineReader, LineWriter
from mcp_server_escalation.adapters.stdio.transport import TRANSPORT_ENV, loop_transport_refusal

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
PROBE = Path(__file__).with_name("stdio_probe.py")


def lines_of(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


# -- the choice ---------------------------------------------------------------------------


def test_three_separate_pipes_are_served_on_the_loop() -> None:
    pipes = [os.pipe() for _ in range(3)]
    try:
        stdin, stdout, stderr = pipes[0][0], pipes[1][1], pipes[2][1]
        assert loop_transport_refusal({}, (stdin, stdout, stderr)) is None
        assert loop_transport_refusal({TRANSPORT_ENV: "loop"}, (stdin, stdout, stderr)) is None
    finally:
        for pair in pipes:
            for fd in pair:
                os.close(fd)


def test_sockets_are_served_on_the_loop() -> None:
    # libuv (Node hosts such as the MCP Inspector) hands a child socket pairs, not pipes.
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        fds = (pairs[0][0].fileno(), pairs[1][0].fileno(), pairs[2][0].fileno())
        assert loop_transport_refusal({}, fds) is None
    finally:
        for pair in pairs:
            for end in pair:
                end.close()


def test_anything_but_separate_pipes_or_sockets_falls_back_to_the_sdk_transport(tmp_path: Path) -> None:
    regular = tmp_path / "requests.jsonl"
    regular.write_bytes(b"")
    read_end, write_end = os.pipe()
    other_read, other_write = os.pipe()
    file_fd = os.open(regular, os.O_RDONLY)
    null_fd = os.open(os.devnull, os.O_RDWR)
    try:
        assert (
            loop_transport_refusal({}, (file_fd, write_end, other_write)) == "stdin is not a pipe or socket"
        )
        assert (
            loop_transport_refusal({}, (read_end, null_fd, other_write)) == "stdout is not a pipe or socket"
        )
        # stderr on stdout's pipe: the non-blocking flag would reach stderr's writes.
        assert loop_transport_refusal({}, (other_read, write_end, write_end)) == (
            "stdin, stdout and stderr are not three separate pipes"
        )
        assert loop_transport_refusal({TRANSPORT_ENV: "threads"}, (read_end, write_end, other_write)) == (
            f"{TRANSPORT_ENV}=threads"
        )
        assert "neither 'loop' nor 'threads'" in str(
            loop_transport_refusal({TRANSPORT_ENV: "fast"}, (read_end, write_end, other_write))
        )
    finally:
        for fd in (read_end, write_end, other_read, other_write, file_fd, null_fd):
            os.close(fd)


def test_one_socket_for_stdin_and_stdout_falls_back() -> None:
    # asyncio's write transport would take the requests arriving on it for a hang-up.
    ours, theirs = socket.socketpair()
    err_read, err_write = os.pipe()
    try:
        fd = ours.fileno()
        assert loop_transport_refusal({}, (fd, fd, err_write)) is not None
    finally:
        ours.close()
        theirs.close()
        os.close(err_read)
        os.close(err_write)


# -- the line streams, on OS pipes -----------------------------------------------------------


async def read_all(reader: LineReader) -> list[str]:
    return [line async for line in reader]


async def test_lines_arrive_decoded_and_a_last_line_without_newline_counts() -> None:
    read_end, write_end = os.pipe()
    reader = await LineReader.connect(read_end)
    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                lines: list[str] = []

                async def collect() -> None:
                    lines.extend(await read_all(reader))

                tg.start_soon(collect)
                os.write(write_end, b'{"a": 1}\n{"b": ')
                await anyio.lowlevel.checkpoint()  # the second line arrives in two pieces
                os.write(write_end, b'"\xc3\xa9\xff"}\n')
                os.write(write_end, b'{"c": 3}')
                os.close(write_end)
    finally:
        reader.close()
        os.close(read_end)
    # Undecodable bytes are replaced, as the SDK's transport decodes stdin.
    assert lines == ['{"a": 1}\n', '{"b": "\u00e9\ufffd"}\n', '{"c": 3}']


async def test_a_line_over_the_limit_is_dropped_and_the_next_one_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    read_end, write_end = os.pipe()
    reader = await LineReader.connect(read_end, limit=1024)
    writer = threading.Thread(
        target=lambda: (
            os.write(write_end, b"x" * 5000 + b"\n" + b'{"after": true}\n' + b"y" * 3000),
            os.close(write_end),
        )
    )
    try:
        with anyio.fail_after(60):
            writer.start()
            lines = await read_all(reader)
    finally:
        writer.join()
        reader.close()
        os.close(read_end)
    # The over-long line and the over-long unterminated tail are gone; the line between stays.
    assert lines == ['{"after": true}\n']
    assert caplog.text.count("dropped a message of over 1024 bytes") == 2


async def test_an_empty_input_ends_at_once() -> None:
    read_end, write_end = os.pipe()
    os.close(write_end)
    reader = await LineReader.connect(read_end)
    try:
        with anyio.fail_after(60):
            assert await read_all(reader) == []
    finally:
        reader.close()
        os.close(read_end)


def drain_pipe(fd: int, into: bytearray) -> threading.Thread:
    def run() -> None:
        while chunk := os.read(fd, 1 << 16):
            into.extend(chunk)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_a_reader_that_stops_reading_holds_the_writer_back_and_loses_nothing() -> None:
    read_end, write_end = os.pipe()
    writer = await LineWriter.connect(write_end)
    payload = "".join(f'{{"line": {i}, "pad": "{"p" * 1000}"}}\n' for i in range(1000))  # ~1 MiB
    received = bytearray()
    try:
        await writer.write(payload)
        # Nobody reads: the pipe (64 KiB) and the transport's buffer fill, and flush waits.
        with anyio.move_on_after(0.2) as waited:
            await writer.flush()
        assert waited.cancelled_caught, "flush returned although the reader took nothing"
        thread = drain_pipe(read_end, received)
        with anyio.fail_after(60):
            await writer.flush()
            await writer.aclose()
    finally:
        os.close(write_end)  # EOF for the draining thread
        thread.join()
        os.close(read_end)
    assert received.decode() == payload


async def test_closing_lets_a_slow_reader_take_everything() -> None:
    read_end, write_end = os.pipe()
    writer = await LineWriter.connect(write_end)
    payload = "z" * 300_000 + "\n"
    received = bytearray()
    await writer.write(payload)
    thread = drain_pipe(read_end, received)
    try:
        with anyio.fail_after(60):
            await writer.aclose()
    finally:
        os.close(write_end)
        thread.join()
        os.close(read_end)
    assert received.decode() == payload


async def test_closing_with_nobody_reading_gives_up_after_the_drain_time() -> None:
    read_end, write_end = os.pipe()
    writer = await LineWriter.connect(write_end)
    try:
        await writer.write("q" * 300_000)
        with anyio.fail_after(60):
            await writer.aclose(drain_seconds=0.1)
    finally:
        os.close(write_end)
        os.close(read_end)


async def test_writing_after_the_reader_hung_up_is_a_closed_stream() -> None:
    # The SDK's stdout writer ends quietly on anyio.ClosedResourceError.
    read_end, write_end = os.pipe()
    writer = await LineWriter.connect(write_end)
    os.close(read_end)

    async def write_until_refused() -> None:
        while True:
            await writer.write("after the hang-up\n")
            await anyio.sleep(0.01)

    try:
        with anyio.fail_after(60), pytest.raises(anyio.ClosedResourceError):
            await write_until_refused()
    finally:
        await writer.aclose(drain_seconds=0)
        os.close(write_end)


# -- the end of stdin waits for the answers ------------------------------------------------


def request(request_id: int) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call"))


def answer(request_id: int) -> SessionMessage:
    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


async def test_the_read_stream_ends_once_every_request_read_is_answered() -> None:
    unanswered = Unanswered(settle_seconds=30)
    client_send, server_receive = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    server_send, client_receive = anyio.create_memory_object_stream[SessionMessage](10)
    reading, writing = unanswered.reading(server_receive), unanswered.writing(server_send)
    notification = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
    for item in (request(1), notification, request(2)):
        await client_send.send(item)
    await client_send.aclose()  # stdin ends with two requests in flight
    ended = anyio.Event()
    with anyio.fail_after(60):
        async with reading, writing, client_receive, anyio.create_task_group() as tg:

            async def serve() -> None:
                async for _item in reading:
                    pass
                ended.set()

            tg.start_soon(serve)
            await wait_for(lambda: unanswered.ids == {1, 2})
            await writing.send(answer(2))
            await anyio.sleep(0.05)
            assert not ended.is_set(), "the read stream ended with request 1 unanswered"
            await writing.send(answer(1))
            await ended.wait()
            sent = [client_receive.receive_nowait().message for _ in range(2)]
    assert [message.id for message in sent if isinstance(message, JSONRPCResponse)] == [2, 1]


async def test_the_read_stream_ends_after_the_settle_time_when_an_answer_never_comes() -> None:
    unanswered = Unanswered(settle_seconds=0.1)
    client_send, server_receive = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    reading = unanswered.reading(server_receive)
    await client_send.send(request(7))
    await client_send.aclose()
    with anyio.fail_after(60):
        async with reading:
            assert isinstance(await reading.receive(), SessionMessage)
            with pytest.raises(anyio.EndOfStream):
                await reading.receive()
    assert unanswered.ids == {7}


async def test_a_cancelled_request_is_not_waited_for() -> None:
    # The SDK never answers a request its client cancelled.
    unanswered = Unanswered(settle_seconds=30)
    client_send, server_receive = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    reading = unanswered.reading(server_receive)
    cancel = JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3, "reason": "gave up"}
    )
    for item in (request(3), SessionMessage(cancel)):
        await client_send.send(item)
    await client_send.aclose()
    with anyio.fail_after(60):
        async with reading:
            assert [await reading.receive() for _ in range(2)]
            with pytest.raises(anyio.EndOfStream):
                await reading.receive()
    assert unanswered.ids == set()


async def test_once_answers_cannot_be_written_nothing_is_waited_for() -> None:
    unanswered = Unanswered(settle_seconds=30)
    client_send, server_receive = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    server_send, client_receive = anyio.create_memory_object_stream[SessionMessage](10)
    reading, writing = unanswered.reading(server_receive), unanswered.writing(server_send)
    await client_send.send(request(4))
    await client_send.aclose()
    await client_receive.aclose()  # the SDK's stdout writer has ended
    with anyio.fail_after(60):
        async with reading, writing:
            await reading.receive()
            with pytest.raises(anyio.BrokenResourceError):
                await writing.send(answer(4))
            with pytest.raises(anyio.EndOfStream):
                await reading.receive()


async def test_a_writer_stuck_on_a_reader_that_stopped_gives_up_when_told() -> None:
    read_end, write_end = os.pipe()
    writer = await LineWriter.connect(write_end)
    try:
        await writer.write("w" * 1_000_000)
        writer.give_up_after(0.1)
        with anyio.fail_after(60):
            await writer.flush()  # nobody reads: only giving up ends this wait
        with pytest.raises(anyio.ClosedResourceError):
            await writer.write("more")
        await writer.aclose()
    finally:
        os.close(write_end)
        os.close(read_end)


async def wait_for(condition: Any) -> None:
    while not condition():
        await anyio.sleep(0.01)


# -- real processes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "refusal"), [({}, None), ({TRANSPORT_ENV: "threads"}, "ESCALATION_STDIO=threads")]
)
async def test_stray_stdout_output_never_reaches_the_protocol(
    env: dict[str, str], refusal: str | None
) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(PROBE)], env=env or None)
    with tempfile.TemporaryFile("w+") as server_stderr:
        with anyio.fail_after(60):
            async with Client(stdio_client(params, errlog=server_stderr), mode="legacy") as client:
                probed = await client.call_tool("probe", {"text": "which"})
                strayed = await client.call_tool("stray", {"text": "marker"})
                after = await client.call_tool("probe", {"text": "still answering"})
        server_stderr.seek(0)
        logged = server_stderr.read()
    # Launched with pipes, as hosts launch servers: the loop transport serves.
    assert probed.structured_content == {"refusal": refusal, "echo": "which"}
    assert strayed.structured_content == {"refusal": refusal, "echo": "marker"}
    assert after.structured_content == {"refusal": refusal, "echo": "still answering"}
    # Each stray line went to stderr instead (a corrupt protocol line would have failed a call);
    # the unflushed one too, although Python flushes it only at exit, when fd 1 is the wire again.
    for line in ("print marker", "buffered marker", "fd1 marker", "child marker"):
        assert line in logged


async def test_the_console_script_answers_garbage_then_a_request_then_exits_at_eof(db_path: str) -> None:
    raw = (
        lines_of(INITIALIZE, INITIALIZED)
        + b"this is not json\n"
        + b"\xff\xfe\n"
        + json.dumps(start_task_request(2, "after-garbage")).encode()  # no newline: EOF ends it
    )
    with anyio.fail_after(60):
        async with await anyio.open_process([str(SCRIPT), "--db", db_path], stderr=None) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send(raw)
            await process.stdin.aclose()
            output = b"".join([chunk async for chunk in process.stdout])
            returncode = await process.wait()
    messages = [json.loads(line) for line in output.splitlines() if line.strip()]
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert returncode == 0
    assert by_id[2]["result"]["structuredContent"]["task_id"] == "after-garbage"


def read_until_answered(stdout: Any, request_id: int) -> bytes:
    received = b""
    while f'"id":{request_id}'.encode() not in received:
        chunk = os.read(stdout.fileno(), 1 << 16)
        assert chunk, "the server closed stdout before answering"
        received += chunk
    return received


def test_sigterm_ends_serving_cleanly_and_gives_the_pipe_back_blocking(db_path: str) -> None:
    # The test keeps the server's stdin pipe open on its side too, so it sees the pipe's
    # O_NONBLOCK flag, which the loop transport sets while serving.
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [str(SCRIPT), "--db", db_path], stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        os.write(write_end, lines_of(INITIALIZE, INITIALIZED, start_task_request(2, "before-sigterm")))
        answered = read_until_answered(process.stdout, 2)
        assert os.get_blocking(read_end) is False  # the loop transport serves this pipe
        process.terminate()
        _, stderr = process.communicate(timeout=30)
        blocking_after = os.get_blocking(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert process.returncode == 0, stderr.decode()
    assert b"before-sigterm" in answered
    assert blocking_after is True
    assert b"Traceback" not in stderr


def test_a_client_that_hangs_up_stdout_ends_the_server(db_path: str) -> None:
    process = subprocess.Popen(
        [str(SCRIPT), "--db", db_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(lines_of(INITIALIZE, INITIALIZED))
    process.stdin.flush()
    read_until_answered(process.stdout, 1)
    process.stdout.close()  # stdin stays open: only the hang-up can end the server
    try:
        returncode = process.wait(timeout=30)
    finally:
        process.stdin.close()
        stderr = process.stderr.read() if process.stderr else b""
        if process.stderr:
            process.stderr.close()
    assert returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr


def test_a_regular_file_as_stdin_is_served_by_the_sdk_transport(db_path: str, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(lines_of(INITIALIZE, INITIALIZED, start_task_request(2, "from-a-file")))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [str(SCRIPT), "--db", db_path], stdin=stdin, capture_output=True, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    by_id = {m["id"]: m for m in map(json.loads, done.stdout.splitlines()) if "id" in m}
    assert by_id[2]["result"]["structuredContent"]["task_id"] == "from-a-file"


def test_the_console_script_serves_socket_pairs_like_node_hosts_give(db_path: str) -> None:
    # libuv hands a child one socket pair per standard stream; the loop transport serves them.
    stdin_ours, stdin_theirs = socket.socketpair()
    stdout_ours, stdout_theirs = socket.socketpair()
    with stdin_ours, stdin_theirs, stdout_ours, stdout_theirs:
        process = subprocess.Popen(
            [str(SCRIPT), "--db", db_path], stdin=stdin_theirs, stdout=stdout_theirs, stderr=subprocess.PIPE
        )
        stdin_theirs.close()
        stdout_theirs.close()
        stdin_ours.sendall(lines_of(INITIALIZE, INITIALIZED, start_task_request(2, "over-sockets")))
        stdout_ours.settimeout(60)
        received = b""
        while b'"id":2' not in received:
            chunk = stdout_ours.recv(1 << 16)
            assert chunk, "the server closed stdout before answering"
            received += chunk
        stdin_ours.shutdown(socket.SHUT_WR)  # EOF on the server's stdin
        _, stderr_bytes = process.communicate(timeout=60)
    stderr = stderr_bytes.decode()
    assert process.returncode == 0, stderr
    by_id = {m["id"]: m for m in map(json.loads, received.splitlines()) if "id" in m}
    assert by_id[2]["result"]["structuredContent"]["task_id"] == "over-sockets"
    assert "Traceback" not in stderr
