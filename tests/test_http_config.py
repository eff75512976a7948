"""HTTP configuration (issue 16): tokens, Host/Origin allow-lists, the 401, the body limit.

The servers are the installed console script, talked to over real HTTP: the process and its
listener are what is tested (the tests that need no configuration of their own share one).
A refusal at start happens before anything listens, and is checked in this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest

from http_support import AGENT_TOKEN, OPERATOR_TOKEN, free_port, http_client, start_http, stop_http
from in_process import run_main

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class Refused:
    returncode: int
    stderr: str


async def _serve_once(tmp_path: Path, env: dict[str, str]) -> Refused:
    """The HTTP server's start, expected to fail before it listens; run in this process
    (``in_process.py``): the refusal is under test, not the process (test_http.py starts
    the script for one)."""
    code, _, err = await run_main(
        ["serve", "--transport", "http", "--port", str(free_port()), "--db", str(tmp_path / "e.db")],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}, **env},
    )
    return Refused(code, err.decode())


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """One server with the default configuration (its port and its log) for the tests that
    need no other: each only reads or works on a task of its own."""
    process, port, log = start_http(tmp_path_factory.mktemp("http"))
    try:
        yield port, log
    finally:
        stop_http(process)


async def test_one_token_for_both_roles_is_refused_at_start(tmp_path: Path) -> None:
    done = await _serve_once(
        tmp_path, {"ESCALATION_AGENT_TOKEN": OPERATOR_TOKEN, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}
    )

    assert done.returncode == 1
    assert "ESCALATION_AGENT_TOKEN and ESCALATION_OPERATOR_TOKEN are the same" in done.stderr
    assert OPERATOR_TOKEN not in done.stderr, "the error must not print the secret"


async def test_a_token_shorter_than_32_characters_is_refused_naming_its_variable(tmp_path: Path) -> None:
    done = await _serve_once(
        tmp_path, {"ESCALATION_AGENT_TOKEN": AGENT_TOKEN, "ESCALATION_OPERATOR_TOKEN": "op-secret-2"}
    )

    assert done.returncode == 1
    assert "ESCALATION_OPERATOR_TOKEN: 11 characters" in done.stderr
    assert "32" in done.stderr


@pytest.mark.parametrize("token", [" " * 32, " " * 8 + "a" * 32, "a" * 32 + "\t", "a" * 16 + " " + "b" * 16])
async def test_a_blank_or_padded_token_is_refused_at_start_naming_its_variable(
    tmp_path: Path, token: str
) -> None:
    """32 spaces were a token anybody could guess; a padded one is one nobody can present."""
    with anyio.fail_after(60):  # a server that starts on it would serve until then
        done = await _serve_once(
            tmp_path, {"ESCALATION_AGENT_TOKEN": token, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}
        )

    assert done.returncode == 1
    said = " ".join(done.stderr.split())  # wrapped to the terminal's width
    assert "ESCALATION_AGENT_TOKEN: holds white space (blank or padded): a token is one word" in said


async def test_a_wrong_token_gets_a_plain_401_that_points_at_no_oauth_server(
    default_server: tuple[int, Path],
) -> None:
    port, _ = default_server
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        refused = await http.post(
            "/mcp", json=INITIALIZE, headers={**JSON_HEADERS, "Authorization": "Bearer wrong"}
        )
        metadata = await http.get("/.well-known/oauth-protected-resource/mcp")

    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert "resource_metadata" not in challenge
    assert refused.json()["error"] == "invalid_token"
    assert metadata.status_code == 404


async def test_beyond_loopback_only_allowed_hosts_and_origins_are_answered(tmp_path: Path) -> None:
    process, port, log = start_http(
        tmp_path,
        "--host",
        "0.0.0.0",  # noqa: S104 (the case under test: every interface)
        "--allowed-host",
        "mcp.example",
        "--allowed-origin",
        "https://console.example",
    )
    auth = {**JSON_HEADERS, "Authorization": f"Bearer {AGENT_TOKEN}"}
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            rebound = await http.post(
                "/mcp", json=INITIALIZE, headers={**auth, "Host": f"evil.example:{port}"}
            )
            foreign = await http.post(
                "/mcp",
                json=INITIALIZE,
                headers={**auth, "Host": "mcp.example", "Origin": "https://evil.example"},
            )
            named = await http.post(
                "/mcp",
                json=INITIALIZE,
                headers={**auth, "Host": f"mcp.example:{port}", "Origin": "https://console.example"},
            )
    finally:
        stop_http(process)

    assert rebound.status_code == 421
    assert foreign.status_code == 403
    assert named.status_code == 200
    stderr = log.read_text()
    assert "WARNING: serving on 0.0.0.0" in stderr
    assert "plain HTTP" in stderr
    assert "TLS reverse proxy" in stderr


async def test_on_loopback_no_plain_http_warning_is_given(default_server: tuple[int, Path]) -> None:
    _, log = default_server  # the warning would be given at start, before the server listens

    assert "plain HTTP" not in log.read_text()


async def test_a_1_mib_artifact_of_wide_characters_is_accepted_not_refused_as_too_large(
    default_server: tuple[int, Path],
) -> None:
    # 1 Mi characters is the documented artifact limit; each of these is 4 bytes of UTF-8,
    # so the body is just over the SDK's default 4 MiB.
    artifact = "\N{GRINNING FACE}" * (1024 * 1024)
    port, _ = default_server
    with anyio.fail_after(60):
        async with http_client(f"http://127.0.0.1:{port}/mcp", AGENT_TOKEN) as agent:
            await agent.call("start_task", title="big artifact", task_id="big")
            recorded = await agent.call(
                "record_attempt", task_id="big", step="draft", status="accepted", artifact=artifact
            )

    assert recorded["attempt_number"] == 1
