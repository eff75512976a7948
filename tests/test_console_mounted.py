"""``serve --transport http`` with the console next to ``/mcp`` on the same port."""

from __future__ import annotations

import os
from pathlib import Path

import httpx2

from http_support import AGENT_TOKEN, OPERATOR_TOKEN, http_client, start_http, stop_http


async def test_serve_over_http_mounts_the_console_next_to_mcp_behind_its_own_login(tmp_path: Path) -> None:
    process, port, log = start_http(tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
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
    finally:
        stop_http(process)
    assert "Traceback" not in log.read_text()


def test_serve_over_http_without_the_operator_token_serves_no_console(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env["ESCALATION_AGENT_TOKEN"] = AGENT_TOKEN
    process, port, _log = start_http(tmp_path, env=env)
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/login").status_code == 404
    finally:
        stop_http(process)


def test_serve_over_http_passes_secure_cookie_to_the_mounted_console(tmp_path: Path) -> None:
    process, port, _log = start_http(tmp_path, "--secure-cookie")
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx2.Client(base_url=url, headers={"Origin": url}) as browser:
            login = browser.post("/login", data={"token": OPERATOR_TOKEN})
    finally:
        stop_http(process)
    assert login.status_code == 303
    assert "Secure" in login.headers["set-cookie"]
