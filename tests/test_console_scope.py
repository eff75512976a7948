"""A person's operator token with a scope (the tokens file's ``projects``, ``task_prefixes``)
keeps to it in the console as on ``/mcp``: the queue, the answered list and the live stream
show only the scope's escalations, and a page, an answer or a verdict on another task's is
refused with a page that says why, before anything is read or recorded.

The server runs as the installed script serves it (``serve --transport http``, the console
next to ``/mcp``); agents report over MCP with the SDK's client, the operators use the
console as a browser does.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2

from conftest import Agent
from console_support import form_values
from http_support import http_client, http_in_thread, token_digest

RUNNER = "runner-" + "3" * 40  # an agent's own token, without a scope
ALICE = "alice-" + "1" * 40  # an operator without a scope
CAROL = "carol-" + "7" * 40  # an operator who may see the shop's tasks only


TOKENS = f"""
[[tokens]]
name = "ci-runner"
role = "agent"
sha256 = "{token_digest(RUNNER)}"

[[tokens]]
name = "alice"
role = "operator"
sha256 = "{token_digest(ALICE)}"

[[tokens]]
name = "carol"
role = "operator"
sha256 = "{token_digest(CAROL)}"
projects = ["/srv/ci/shop"]
task_prefixes = ["ci-shop-"]
"""
OUTSIDE = "task victim is outside this token's scope: it may report on tasks starting with ci-shop-"
FAILURE = {"step": "test", "message": "AssertionError: total is 3", "signal_type": "test_failure"}


def _env(tmp_path: Path) -> dict[str, str]:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(TOKENS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    return {**env, "ESCALATION_TOKENS_FILE": str(tokens)}


async def _ask(agent: Agent, task_id: str, project: str) -> int:
    await agent.call("start_task", title=task_id, task_id=task_id, project=project)
    asked = await agent.call("raise_escalation", task_id=task_id, reason=f"Which database for {task_id}?")
    return int(asked["escalation"]["escalation_id"])


@contextmanager
def _browser(url: str, token: str) -> Iterator[httpx2.Client]:
    """A browser logged in to the console with ``token``."""
    with httpx2.Client(base_url=url, headers={"Origin": url}, timeout=30) as browser:
        assert browser.post("/login", data={"token": token}).status_code == 303
        yield browser


def _said(page: httpx2.Response) -> str:
    """The page's error paragraph, as the person reads it."""
    found = re.search(r'<p class="error">(.*?)</p>', page.text, re.DOTALL)
    assert found, page.text
    return html.unescape(found.group(1)).strip()


def _linked(page: str) -> set[int]:
    return {int(n) for n in re.findall(r'href="/escalations/(\d+)"', page)}


async def test_a_scoped_operator_sees_and_answers_only_the_scopes_escalations_in_the_console(
    tmp_path: Path,
) -> None:
    with http_in_thread(tmp_path, env=_env(tmp_path)) as port:
        url = f"http://127.0.0.1:{port}"
        async with http_client(f"{url}/mcp", RUNNER) as agent:
            theirs = await _ask(agent, "victim", "/srv/other")
            their_failure = (await agent.call("record_failure", task_id="victim", **FAILURE))["failure"]
            answered = await _ask(agent, "victim-2", "/srv/other")
            # a task of the scope's folder whose id is outside its prefixes
            neighbour = await _ask(agent, "neighbour", "/srv/ci/shop/backend")
            mine = await _ask(agent, "ci-shop-1", "/srv/ci/shop/backend")
        async with http_client(f"{url}/mcp", ALICE) as alice:
            await alice.call(
                "resolve_escalation", escalation_id=answered, response_type="guidance", content="Use SQLite"
            )

        def carol_browses() -> dict[str, httpx2.Response]:
            with _browser(url, CAROL) as carol:
                shown = form_values(carol.get(f"/escalations/{mine}").text)
                pages = {
                    "queue": carol.get("/"),
                    "escalation": carol.get(f"/escalations/{theirs}"),
                    "answer": carol.post(
                        f"/escalations/{theirs}/answer",
                        data={**shown, "response_type": "guidance", "content": "Take over"},
                    ),
                    "verdict": carol.post(
                        f"/escalations/{answered}/verdict", data={"csrf": shown["csrf"], "verdict": "useful"}
                    ),
                    "task": carol.get("/tasks/victim"),
                    "failure": carol.get(f"/failures/{their_failure['failure_id']}"),
                    "stats": carol.get("/stats"),
                    "own answer": carol.post(
                        f"/escalations/{mine}/answer",
                        data={**shown, "response_type": "guidance", "content": "Go"},
                    ),
                }
                pages["answered"] = carol.get("/answered")
                return pages

        def alice_browses() -> tuple[str, str, str]:
            with _browser(url, ALICE) as alice_console:
                pages = ("/", "/answered", f"/escalations/{answered}")
                queue, answered_list, judged = (alice_console.get(page).text for page in pages)
                return queue, answered_list, judged

        pages = await anyio.to_thread.run_sync(carol_browses)
        everyone, everyone_answered, judged = await anyio.to_thread.run_sync(alice_browses)
        async with http_client(f"{url}/mcp", ALICE) as alice:
            their_state = (await alice.call("get_escalation", escalation_id=theirs))["escalation"]

    assert _linked(pages["queue"].text) == {mine}
    assert "0 escalations" not in pages["queue"].text
    refused = {name: pages[name] for name in ("escalation", "answer", "verdict", "task", "failure")}
    assert {name: page.status_code for name, page in refused.items()} == dict.fromkeys(refused, 403)
    assert {name: _said(page) for name, page in refused.items()} == {
        "escalation": OUTSIDE,
        "answer": OUTSIDE,
        "verdict": OUTSIDE.replace("task victim ", "task victim-2 "),
        "task": OUTSIDE,
        "failure": OUTSIDE,
    }
    assert "Which database for victim" not in pages["escalation"].text
    assert pages["stats"].status_code == 403
    assert "every task" in _said(pages["stats"])
    # the header offers a scoped operator no link to the page refused to them, others have it
    assert 'href="/stats"' not in pages["queue"].text
    assert 'href="/stats"' in everyone
    # nothing reached the other task: its question still waits, the other answer has no verdict
    assert their_state["status"] == "pending"
    assert "<dt>Verdict</dt>" not in judged
    # inside the scope the console works, and the answered list is the scope's
    assert pages["own answer"].status_code == 303
    assert _linked(pages["answered"].text) == {mine}
    # an operator without a scope sees every task's (answers not yet acknowledged stay queued)
    assert _linked(everyone) == {theirs, answered, neighbour, mine}
    assert _linked(everyone_answered) == {answered, mine}


def _changes(stream: Iterator[str]) -> Iterator[list[int]]:
    """The ids of each ``change`` event of a console's live stream."""
    for line in stream:
        if line.startswith("data: "):
            yield json.loads(line.removeprefix("data: "))


async def test_a_scoped_operators_live_stream_names_only_the_scopes_escalations(tmp_path: Path) -> None:
    with http_in_thread(tmp_path, env=_env(tmp_path)) as port:
        url = f"http://127.0.0.1:{port}"
        heard: list[list[int]] = []
        opened = anyio.Event()

        def listen() -> None:
            with _browser(url, CAROL) as carol, carol.stream("GET", "/events") as stream:
                lines = stream.iter_lines()
                assert next(lines).startswith("retry:")
                anyio.from_thread.run_sync(opened.set)
                heard.append(next(_changes(lines)))

        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, listen)
            with anyio.fail_after(30):
                await opened.wait()
            async with http_client(f"{url}/mcp", RUNNER) as agent:
                await _ask(agent, "victim", "/srv/other")
                mine = await _ask(agent, "ci-shop-1", "/srv/ci/shop/backend")
    assert heard == [[mine]]
