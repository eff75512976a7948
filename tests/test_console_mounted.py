"""``serve --transport http`` with the console next to ``/mcp`` on the same port (the server
the command builds, run in a thread: its process start is tested with the other ``serve`` tests)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx2

from http_support import AGENT_TOKEN, OPERATOR_TOKEN, http_client, http_in_thread


async def test_serve_over_http_mounts_the_console_next_to_mcp_behind_its_own_login(tmp_path: Path) -> None:
    with http_in_thread(tmp_path) as port:
        url = f"http://127.0.0.1:{port}"
        async with http_client(f"{url}/mcp", AGENT_TOKEN) as agent:
            await agent.call("start_task", title="Pick a cache", task_id="mounted")
            await agent.call("raise_escalation", task_id="mounted", reason="Redis or memcached?")
        with httpx2.Client(base_url=url, headers={"Origin": url}) as browser:
            assert browser.get("/").headers["location"] == "/login"
            assert browser.post("/login", data={"token": AGENT_TOKEN}).status_code == 403
            assert browser.post("/login", data={"token": OPERATOR_TOKEN}).status_code == 303
            assert "Redis or memcached?" in browser.get("/").text
            assert browser.get("/", headers={"Host": "evil.example"}).status_code == 421
            # the session cookie opens the console, never /mcp
            assert browser.post("/mcp", json={}).status_code == 401


def test_serve_over_http_without_the_operator_token_serves_no_console(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env["ESCALATION_AGENT_TOKEN"] = AGENT_TOKEN
    with (
        http_in_thread(tmp_path, env=env) as port,
        httpx2.Client(base_url=f"http://127.0.0.1:{port}") as client,
    ):
        assert client.get("/login").status_code == 404


def test_serve_over_http_passes_secure_cookie_to_the_mounted_console(tmp_path: Path) -> None:
    with http_in_thread(tmp_path, "--secure-cookie") as port:
        url = f"http://127.0.0.1:{port}"
        with httpx2.Client(base_url=url, headers={"Origin": url}) as browser:
            login = browser.post("/login", data={"token": OPERATOR_TOKEN})
    assert login.status_code == 303
    assert "Secure" in login.headers["set-cookie"]
