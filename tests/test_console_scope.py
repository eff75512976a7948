"""A person's operator token with a scope (the tokens file's ``projects``, ``task_prefixes``)
keeps to it in the console as on ``/mcp``: the queue, the answered list, the stats and the
live stream show only the scope's escalations, and a page, an answer or a verdict on another task's is
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
from operator_support import delivery_reads, eventually, write_config

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
    # the header links every operator to the stats (a scoped one's count the scope's tasks)
    assert 'href="/stats"' in pages["queue"].text
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


def _cells(row: str) -> str:
    return " / ".join(html.unescape(cell) for cell in re.findall(r"<t[dh]>([^<]*)</t[dh]>", row))


def _figures(page: httpx2.Response) -> dict[str, object]:
    """What a person reads on a stats page: its headline, each fact, the day's counts, the
    total of the table by kind and status, the answers charted, the notifiers' rows and the
    verdicts' rows per project."""
    assert page.status_code == 200, page.text
    text = page.text
    headline = text.split("<h1>Stats</h1>", 1)[1].split("</p>", 1)[0]
    said: dict[str, object] = {"headline": " ".join(html.unescape(re.sub(r"<[^>]+>", "", headline)).split())}
    said |= {html.unescape(k): v for k, v in re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", text)}
    said["last days"] = re.findall(r"\(UTC\): ([^.]*)\.", text)[0]
    said["all"] = re.findall(r"<tr><th>All</th>(?:<td>\d+</td>)*<td>(\d+)</td></tr>", text)[0]
    said["charted"] = re.findall(r"\((\d+) in all\)", text)[0]
    rows = [_cells(row) for row in re.findall(r"<tr>(.*?)</tr>", text)]
    said["notifiers"] = [row for row in rows if row.startswith("command:")]
    said["verdicts"] = [row for row in rows if "/srv/" in row]
    return said


def _stats_section(page: httpx2.Response) -> str:
    """The figures of a stats page, as the live stream refreshes them."""
    found = re.search(r'<section id="stats".*?</section>', page.text, re.DOTALL)
    assert found, page.text
    return found.group(0)


# A notifier that delivers the scope's tasks' announcements and fails every other task's.
NOTIFIER = """grep -q '"ci-shop-[12]"' || { echo 'no route to that team' >&2; exit 3; }"""


async def test_a_scoped_operators_stats_count_only_the_tasks_of_the_scope(tmp_path: Path) -> None:
    config = write_config(tmp_path / "notify.toml", command=NOTIFIER)
    with http_in_thread(tmp_path, "--config", str(config), env=_env(tmp_path)) as port:
        url = f"http://127.0.0.1:{port}"

        async def ask(task_id: str, project: str) -> int:
            """An escalation on the task, once the notifier delivered it or failed to."""
            async with http_client(f"{url}/mcp", RUNNER) as agent:
                asked = await _ask(agent, task_id, project)
            async with delivery_reads(str(tmp_path / "esc.db")) as read:

                async def tried() -> bool:
                    return any(d.delivered_at or d.last_error for d in await read(asked))

                await eventually(tried, 30, f"the notifier tried escalation {asked}")
            return asked

        def answer(escalation_id: int, verdict: str) -> None:
            with _browser(url, ALICE) as alice:
                shown = form_values(alice.get(f"/escalations/{escalation_id}").text)
                data = {**shown, "response_type": "guidance", "content": "Use SQLite", "verdict": verdict}
                assert alice.post(f"/escalations/{escalation_id}/answer", data=data).status_code == 303

        def stats(token: str) -> httpx2.Response:
            with _browser(url, token) as browser:
                return browser.get("/stats")

        mine = await ask("ci-shop-1", "/srv/ci/shop/backend")
        await ask("ci-shop-2", "/srv/ci/shop")  # left waiting
        theirs = await ask("victim", "/srv/other")
        # outside by its id (in the scope's folder), and by its folder (with the scope's prefix)
        neighbour = await ask("neighbour", "/srv/ci/shop/backend")
        await ask("ci-shop-9", "/srv/other")  # left waiting, its announcement retried
        for escalation_id, verdict in ((mine, "useful"), (theirs, "false_alarm"), (neighbour, "useful")):
            await anyio.to_thread.run_sync(answer, escalation_id, verdict)
        carols = await anyio.to_thread.run_sync(stats, CAROL)
        alices = await anyio.to_thread.run_sync(stats, ALICE)
        # another task's escalation, announced, answered and judged, changes nothing on them
        late = await ask("ci-shop-late", "/srv/other")
        await anyio.to_thread.run_sync(answer, late, "false_alarm")
        carols_then = await anyio.to_thread.run_sync(stats, CAROL)
        alices_then = await anyio.to_thread.run_sync(stats, ALICE)

    mine_shown, everyone, everyone_then = _figures(carols), _figures(alices), _figures(alices_then)
    notifier = str(mine_shown["notifiers"]).split(" / ")[0].strip("['")
    # how long the one answer took is the machine's: measured, not a number to expect
    assert all(mine_shown.pop(fact) for fact in ("Median time to answer", "95th percentile"))
    assert mine_shown == {
        "headline": "Only the escalations of the tasks your token may see: tasks whose id starts with"
        " ci-shop-, in /srv/ci/shop or a folder below it. Other tasks' escalations are not counted here.",
        "Answered by a person": "1",
        "Waiting for you": "1",
        "Closed without a person's answer": "0",
        "Answered within an hour": "1 of 1 (100%; the goal is 95%)",
        "last days": "2 raised, 1 answered by a person, 1 still waiting for you",
        "all": "2",
        "charted": "1",
        # delivered, waiting, failed attempts, the latest error: the other tasks' failures are not theirs
        "notifiers": [f"{notifier} / 2 / 0 / 0 / no error"],
        "verdicts": ["question from the agent / /srv/ci/shop/backend / 1 / 0 / 100%"],
    }
    assert "/srv/other" not in carols.text
    assert "no route" not in carols.text
    assert _stats_section(carols_then) == _stats_section(carols)
    # an operator without a scope counts every task's escalations, the late one too
    assert str(everyone["headline"]).startswith("Every escalation in the store")
    assert (everyone["all"], everyone["Answered by a person"], everyone["Waiting for you"]) == ("5", "3", "2")
    name, delivered, waiting, failed, error = str(everyone["notifiers"]).strip("[']").split(" / ")
    assert (name, delivered, waiting, error) == (
        notifier,
        "2",
        "3",
        "command exited with status 3: no route to that team",
    )
    assert int(failed) >= 3
    assert everyone["verdicts"] == [
        "question from the agent / /srv/ci/shop/backend / 2 / 0 / 100%",
        "question from the agent / /srv/other / 0 / 1 / 0%",
    ]
    assert (everyone_then["all"], str(everyone_then["notifiers"]).split(" / ")[2]) == ("6", "4")


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
