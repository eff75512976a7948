"""One token per person (ESCALATION_TOKENS_FILE): the token names who answered, and an agent's never answers.

Every test starts the installed console script over HTTP and talks to it as its clients do:
the SDK's client over streamable HTTP for the MCP tools, a plain HTTP client for the console.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError, types

from conftest import Agent
from console_support import form_values
from hooks_support import PYTEST_FAIL, bash_failure, post_edit
from http_support import (
    AGENT_TOKEN,
    OPERATOR_TOKEN,
    SCRIPT,
    free_port,
    http_client,
    http_in_thread,
    token_digest,
)
from in_process import run_main
from mcp_server_escalation.adapters.http.auth import Holder, load_tokens

ALICE = "alice-" + "1" * 40
BOB = "bob-" + "2" * 40
RUNNER = "runner-" + "3" * 40  # an agent's own token


# alice's entry holds the digest (what the docs recommend), bob's the token itself.
TEAM = f"""
[[tokens]]
name = "alice"
role = "operator"
sha256 = "{token_digest(ALICE)}"

[[tokens]]
name = "bob"
role = "operator"
token = "{BOB}"

[[tokens]]
name = "ci-runner"
role = "agent"
sha256 = "{token_digest(RUNNER)}"
"""


def team_env(tmp_path: Path, text: str = TEAM, **shared: str) -> dict[str, str]:
    """The server's environment: the tokens file only, plus any shared tokens given."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    return {**env, "ESCALATION_TOKENS_FILE": str(tokens), **shared}


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[str]:
    """The HTTP server on the team's tokens file (in a thread: the installed script's start on
    a tokens file is tested by itself below)."""
    with http_in_thread(tmp_path, env=team_env(tmp_path)) as port:
        yield f"http://127.0.0.1:{port}"


async def ask(url: str, token: str, task_id: str) -> int:
    """An ask_human question raised by an agent holding ``token``; its id."""
    async with http_client(f"{url}/mcp", token) as agent:
        await agent.call("start_task", title="Pick a database", task_id=task_id)
        raised = await agent.call("raise_escalation", task_id=task_id, reason="Which database?")
    return int(raised["escalation"]["escalation_id"])


async def responder_of(url: str, escalation_id: int) -> str:
    """The responder the agent reads back with get_escalation."""
    async with http_client(f"{url}/mcp", RUNNER) as agent:
        got = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0)
    return str(got["escalation"]["response"]["responder"])


async def test_two_operators_answering_over_mcp_are_each_recorded_by_their_own_token(
    team_server: str,
) -> None:
    with anyio.fail_after(60):
        first = await ask(team_server, RUNNER, "team-1")
        second = await ask(team_server, RUNNER, "team-2")
        for token, escalation_id in ((ALICE, first), (BOB, second)):
            async with http_client(f"{team_server}/mcp", token) as operator:
                await operator.call(
                    "resolve_escalation",
                    escalation_id=escalation_id,
                    response_type="guidance",
                    content="Use SQLite",
                    responder="carol",  # a name the call gives: the token's holder wins
                )
        recorded = [await responder_of(team_server, first), await responder_of(team_server, second)]

    assert recorded == ["http:alice", "http:bob"]


async def test_two_operators_answering_on_the_console_are_each_recorded_as_who_logged_in(
    team_server: str, tmp_path: Path
) -> None:
    with anyio.fail_after(60):
        first = await ask(team_server, RUNNER, "team-console-1")
        second = await ask(team_server, RUNNER, "team-console-2")
    for token, escalation_id in ((BOB, first), (ALICE, second)):
        with httpx2.Client(base_url=team_server, headers={"Origin": team_server}) as browser:
            assert browser.post("/login", data={"token": token}).status_code == 303
            shown = form_values(browser.get(f"/escalations/{escalation_id}").text)
            answer = {**shown, "response_type": "guidance", "content": "Go", "responder": "mallory"}
            assert browser.post(f"/escalations/{escalation_id}/answer", data=answer).status_code == 303
            assert "console:" in browser.get(f"/escalations/{escalation_id}").text

    with anyio.fail_after(60):
        recorded = [await responder_of(team_server, first), await responder_of(team_server, second)]
    assert recorded == ["console:bob", "console:alice"]
    with anyio.fail_after(30):
        shown = await anyio.run_process(
            [SCRIPT, "escalations", "show", str(first), "--db", str(tmp_path / "esc.db")]
        )
    assert "guidance by console:bob" in shown.stdout.decode()


async def test_an_agents_own_token_answers_through_no_door(team_server: str) -> None:
    with anyio.fail_after(60):
        escalation_id = await ask(team_server, RUNNER, "team-agent")
        async with http_client(f"{team_server}/mcp", RUNNER) as agent:
            refused = await agent.error(
                "resolve_escalation",
                escalation_id=escalation_id,
                response_type="guidance",
                content="do it",
                responder="alice",
            )
            still = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0)
    with httpx2.Client(base_url=team_server, headers={"Origin": team_server}) as browser:
        login = browser.post("/login", data={"token": RUNNER})

    assert "agent role" in refused
    assert still["escalation"]["status"] == "pending"
    assert login.status_code == 403
    assert "agent token" in login.text
    assert "set-cookie" not in login.headers


async def test_the_shared_tokens_keep_working_next_to_the_tokens_file(tmp_path: Path) -> None:
    env = team_env(tmp_path, ESCALATION_AGENT_TOKEN=AGENT_TOKEN, ESCALATION_OPERATOR_TOKEN=OPERATOR_TOKEN)
    with http_in_thread(tmp_path, env=env) as port:
        url = f"http://127.0.0.1:{port}"
        with anyio.fail_after(60):
            shared = await ask(url, AGENT_TOKEN, "team-shared-1")
            personal = await ask(url, AGENT_TOKEN, "team-shared-2")
            for token, escalation_id in ((OPERATOR_TOKEN, shared), (ALICE, personal)):
                async with http_client(f"{url}/mcp", token) as operator:
                    await operator.call(
                        "resolve_escalation",
                        escalation_id=escalation_id,
                        response_type="guidance",
                        content="Go",
                        responder="carol",
                    )
            recorded = [await responder_of(url, shared), await responder_of(url, personal)]
        with httpx2.Client(base_url=url, headers={"Origin": url}) as browser:
            assert browser.post("/login", data={"token": AGENT_TOKEN}).status_code == 403
            assert browser.post("/login", data={"token": OPERATOR_TOKEN}).status_code == 303

    # The shared token names nobody: its answer keeps the name the call gives, as before.
    assert recorded == ["carol", "http:alice"]


def _arguments(tmp_path: Path, command: str) -> list[str]:
    options = ["--transport", "http"] if command == "serve" else []
    return [command, *options, "--port", str(free_port()), "--db", str(tmp_path / "e.db")]


async def _serve_once(env: dict[str, str], tmp_path: Path, command: str = "serve") -> tuple[int, str]:
    """A start expected to fail before it listens, run in this process (``in_process.py``):
    (exit code, stderr unwrapped, since errors wrap at 88 columns)."""
    code, _, err = await run_main(_arguments(tmp_path, command), env=env)
    return code, " ".join(err.decode().split())


BAD_FILES = (
    (
        '[[tokens]]\nname = "ci"\nrole = "agent"\ntoken = "' + " " * 40 + '"\n',
        "[[tokens]] entry 1 ('ci'), token: holds white space (blank or padded): a token is one word",
        " " * 40,
    ),
    (
        f'[[tokens]]\nname = "ci"\nrole = "agent"\ntoken = "{RUNNER}"\nprojects = ["srv/shop"]\n',
        "[[tokens]] entry 1 ('ci'), projects.0: a list of 1 to 100 absolute folders",
        RUNNER,
    ),
    (
        f'[[tokens]]\nname = "ci"\nrole = "agent"\ntoken = "{RUNNER}"\ntask_prefixes = ["ci prefix"]\n',
        "[[tokens]] entry 1 ('ci'), task_prefixes.0: a list of 1 to 100 starts of task ids",
        RUNNER,
    ),
    (
        f'[[tokens]]\nname = "alice"\nrole = "operator"\ntoken = "{ALICE}"\n\n'
        '[[tokens]]\nname = "bob"\nrole = "operator"\ntoken = "short-secret-9"\n',
        "[[tokens]] entry 2 ('bob'), token: String should have at least 32 characters",
        "short-secret-9",
    ),
    (
        f'[[tokens]]\nname = "alice"\nrole = "operator"\ntoken = "{ALICE}"\n\n'
        f'[[tokens]]\nname = "bob"\nrole = "operator"\nsha256 = "{token_digest(ALICE)}"\n',
        "[[tokens]] entry 2 ('bob'), token: the same token as entry 1",
        ALICE,
    ),
    (
        f'[[tokens]]\nname = "alice"\nrole = "admin"\nsha256 = "{token_digest(ALICE)}"\n',
        "[[tokens]] entry 1 ('alice'), role: must be 'agent' or 'operator'",
        ALICE,
    ),
    (
        f'[[tokens]]\nname = "alice"\nrole = "operator"\ntoken = "{ALICE}"\n'
        f'sha256 = "{token_digest(ALICE)}"\n',
        "[[tokens]] entry 1 ('alice'), entry: give exactly one of token and sha256",
        ALICE,
    ),
    (
        f'[[tokens]]\nname = "alice"\nrole = "operator"\nsha256 = "{token_digest(ALICE)[:40]}"\n',
        "[[tokens]] entry 1 ('alice'), sha256: 64 hex digits",
        ALICE,
    ),
    (
        f'[[tokens]]\nname = "alice"\nrole = "operator"\ntoken = "{ALICE}"\n\n'
        f'[[tokens]]\nname = "alice"\nrole = "agent"\ntoken = "{BOB}"\n',
        "[[tokens]] entry 2 ('alice'), role: 'alice' is operator in entry 1",
        BOB,
    ),
)


@pytest.mark.parametrize(("text", "message", "secret"), BAD_FILES)
@pytest.mark.parametrize("command", ["serve", "console"])
async def test_a_bad_tokens_file_is_refused_at_start_naming_the_entry_and_the_field(
    tmp_path: Path, text: str, message: str, secret: str, command: str
) -> None:
    code, said = await _serve_once(team_env(tmp_path, text), tmp_path, command)

    assert code == 1
    assert message in said
    assert str(tmp_path / "tokens.toml") in said
    assert secret not in said, "the error must not print the token"


@pytest.mark.parametrize("command", ["serve", "console"])
def test_the_installed_script_refuses_a_bad_tokens_file_before_it_listens(
    tmp_path: Path, command: str
) -> None:
    text, message, secret = BAD_FILES[0]
    done = subprocess.run(
        [SCRIPT, *_arguments(tmp_path, command)],
        env=team_env(tmp_path, text),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert done.returncode == 1
    assert message in " ".join(done.stderr.split())
    assert secret not in done.stderr


async def test_a_file_token_equal_to_a_shared_token_is_refused_naming_the_variable(tmp_path: Path) -> None:
    env = team_env(tmp_path, ESCALATION_OPERATOR_TOKEN=BOB)

    code, said = await _serve_once(env, tmp_path)

    assert code == 1
    assert "[[tokens]] entry 2 ('bob'), token: the same token as ESCALATION_OPERATOR_TOKEN" in said
    assert BOB not in said


async def test_a_missing_tokens_file_is_refused_naming_its_variable(tmp_path: Path) -> None:
    env = team_env(tmp_path)
    env["ESCALATION_TOKENS_FILE"] = str(tmp_path / "nowhere.toml")

    code, said = await _serve_once(env, tmp_path)

    assert code == 1
    assert "ESCALATION_TOKENS_FILE" in said
    assert "nowhere.toml" in said


async def test_a_tokens_file_of_agents_alone_serves_no_console_and_the_console_refuses_to_start(
    tmp_path: Path,
) -> None:
    only_agents = f'[[tokens]]\nname = "ci-runner"\nrole = "agent"\nsha256 = "{token_digest(RUNNER)}"\n'
    env = team_env(tmp_path, only_agents)
    with (
        http_in_thread(tmp_path, env=env) as port,
        httpx2.Client(base_url=f"http://127.0.0.1:{port}") as client,
    ):
        assert client.get("/login").status_code == 404

    code, said = await _serve_once(env, tmp_path, "console")
    assert code == 1
    assert "the console opens only with an operator's token" in said


def test_one_person_may_hold_two_tokens_of_one_role_while_changing_over(tmp_path: Path) -> None:
    old, new = "old-" + "4" * 40, "new-" + "5" * 40
    two = (
        f'[[tokens]]\nname = "alice"\nrole = "operator"\nsha256 = "{token_digest(old)}"\n\n'
        f'[[tokens]]\nname = "alice"\nrole = "operator"\ntoken = "{new}"\n'
    )
    book = load_tokens(team_env(tmp_path, two))

    assert book.holder(old) == book.holder(new) == Holder("alice", "operator", personal=True)
    assert book.holder(new[:-1]) is None
    assert book.holder(token_digest(old)) is None, "the digest itself is no token"


SCOPED = "scoped-" + "4" * 40
# What the agent and the person read when the scoped token reaches another agent's task: the
# names as they are, never Python's quotes or a list's brackets.
OUTSIDE_PREFIXES = "task victim is outside this token's scope: it may report on tasks starting with ci-shop-"
OUTSIDE_FOLDERS = (
    "project /srv/other is outside this token's scope: it may report on projects in /srv/ci/shop"
)


def reprs_in(text: str) -> list[str]:
    """The marks of a Python or JSON repr in ``text``: a quote (but the one of "token's") or a
    bracket."""
    return re.findall(r"[\[\]\"]|'", text.replace("token's", ""))


SCOPED_TEAM = (
    TEAM
    + f"""
[[tokens]]
name = "ci-shop"
role = "agent"
sha256 = "{token_digest(SCOPED)}"
projects = ["/srv/ci/shop"]
task_prefixes = ["ci-shop-"]
"""
)


async def test_a_scoped_token_posts_hook_events_only_for_its_projects_and_tasks(tmp_path: Path) -> None:
    """Any token holder could post an event naming another agent's task and pause it; a
    person's token with a scope is refused (403, nothing recorded) outside it."""
    team = SCOPED_TEAM

    def post(token: str, task: str | None, cwd: str, n: int) -> httpx2.Response:
        event = {**bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_scope_{n}"), "cwd": cwd}
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        if task is not None:
            headers["X-Escalation-Task"] = task
        with httpx2.Client(timeout=30) as client:
            return client.post(f"{url}/hooks/claude-code", json=event, headers=headers)

    with http_in_thread(tmp_path, env=team_env(tmp_path, team)) as port:
        url = f"http://127.0.0.1:{port}"
        async with http_client(f"{url}/mcp", RUNNER) as agent:
            await agent.call("start_task", title="someone else's", task_id="victim", project="/srv/other")
        refused = [
            await anyio.to_thread.run_sync(post, SCOPED, "victim", "/srv/ci/shop", 1),
            await anyio.to_thread.run_sync(post, SCOPED, None, "/srv/ci/shop", 2),
            await anyio.to_thread.run_sync(post, SCOPED, "ci-shop-1", "/srv/other", 3),
            await anyio.to_thread.run_sync(post, SCOPED, "ci-shop-1", "/srv/ci/shop/../../other", 4),
            await anyio.to_thread.run_sync(post, SCOPED, "ci-shop-1", "/srv/ci/shopping", 5),
        ]
        inside = await anyio.to_thread.run_sync(post, SCOPED, "ci-shop-1", "/srv/ci/shop/backend", 6)
        unscoped = await anyio.to_thread.run_sync(post, RUNNER, "victim", "/srv/other", 7)
        async with http_client(f"{url}/mcp", RUNNER) as agent:
            victim = await agent.call("get_task", task_id="victim")
            listed = await agent.call("list_escalations", status="all")
    assert [r.status_code for r in refused] == [403] * 5
    assert refused[0].text == f"{OUTSIDE_PREFIXES}; not recorded\n"
    assert refused[1].text == (
        "this token may report only on tasks starting with ci-shop-, and none was named:"
        " name one in X-Escalation-Task; not recorded\n"
    )
    assert refused[2].text == f"{OUTSIDE_FOLDERS}; not recorded\n"
    assert all(r.text.rstrip().endswith("not recorded") for r in refused)
    assert not [r.text for r in refused if reprs_in(r.text)]
    assert (inside.status_code, unscoped.status_code) == (200, 200)
    # only the unscoped token's event reached the victim: one failure, no more
    assert victim["failure_records"] == 1
    assert listed["escalations"] == []


FAILURE = {"step": "test", "message": "AssertionError: total is 3", "signal_type": "test_failure"}


async def start_victim(owner: Agent) -> tuple[int, str]:
    """Another agent's task outside the scope, paused by its question: the question's id and
    its failure record's."""
    await owner.call("start_task", title="someone else's", task_id="victim", project="/srv/other")
    theirs = await owner.call("record_failure", task_id="victim", **FAILURE)
    asked = await owner.call("raise_escalation", task_id="victim", reason="Which database?")
    return int(asked["escalation"]["escalation_id"]), str(theirs["failure"]["failure_id"])


async def test_a_scoped_token_calls_the_tools_only_on_its_projects_tasks(tmp_path: Path) -> None:
    """The same scope holds on /mcp: a scoped token can neither report on, pause, answer nor
    read another agent's task through any tool (named by its id, its escalation or its
    failure record), nor start one outside its prefixes or folders; inside, every tool works."""
    failure = FAILURE
    shop = "/srv/ci/shop"
    with http_in_thread(tmp_path, env=team_env(tmp_path, SCOPED_TEAM)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with http_client(url, RUNNER) as owner:
            their_escalation, their_failure = await start_victim(owner)
        async with http_client(url, SCOPED) as scoped:
            refused = [
                await scoped.error("record_failure", task_id="victim", **failure),
                await scoped.error("raise_escalation", task_id="victim", reason="pause it", blocking=True),
                await scoped.error("end_task", task_id="victim", outcome="abandoned"),
                await scoped.error("get_task", task_id="victim"),
                await scoped.error("acknowledge_response", escalation_id=their_escalation),
                await scoped.error("update_failure", failure_id=their_failure, status="resolved"),
                await scoped.error("start_task", title="take over", task_id="victim", project=shop),
                await scoped.error("start_task", title="no id", project=shop),
                await scoped.error("start_task", title="outside", task_id="ci-shop-2", project="/srv/other"),
            ]
            await scoped.call("start_task", title="mine", task_id="ci-shop-1", project="/srv/ci/shop/backend")
            mine = await scoped.call("record_failure", task_id="ci-shop-1", **failure)
            await scoped.call("update_failure", failure_id=mine["failure"]["failure_id"], status="resolved")
        async with http_client(url, RUNNER) as owner:
            victim = await owner.call("get_task", task_id="victim")
            escalation = await owner.call("get_escalation", escalation_id=their_escalation)
    tools = ("record_failure", "raise_escalation", "end_task", "get_task", "acknowledge_response")
    tools += ("update_failure", "start_task")
    assert refused[:7] == [f"Error executing tool {tool}: {OUTSIDE_PREFIXES}" for tool in tools]
    assert refused[7] == (
        "Error executing tool start_task: this token may report only on tasks starting with ci-shop-,"
        " and none was named: name one in task_id"
    )
    assert refused[8] == f"Error executing tool start_task: {OUTSIDE_FOLDERS}"
    assert not [text for text in refused if reprs_in(text)]
    # nothing reached the victim's task: its own failure and question, paused by that question
    counts = (victim["failure_records"], victim["escalation_count"])
    assert (counts, victim["task"]["status"]) == ((1, 1), "paused")
    assert escalation["escalation"]["status"] == "pending"


async def read_refusal(agent: Agent, uri: str) -> str:
    """The error message of a resource read ("read" when it was read)."""
    try:
        await agent.client.read_resource(uri)
    except MCPError as exc:
        return exc.error.message
    return "read"


async def prompt_refusal(agent: Agent, name: str, **arguments: str) -> str:
    """The error message of a prompt ("given" when it was given)."""
    try:
        await agent.client.get_prompt(name, arguments)
    except MCPError as exc:
        return exc.error.message
    return "given"


def resource_json(read: types.ReadResourceResult) -> dict[str, Any]:
    return json.loads(read.contents[0].text)  # type: ignore[union-attr,no-any-return]


async def test_a_scoped_token_reads_only_its_projects_tasks(tmp_path: Path) -> None:
    """Least privilege on reads too: a scoped token is refused every resource and prompt of a
    task outside its scope, and what lists across tasks (list_escalations without a task, the
    pending resource, a project's guidance, a repeat's warning) shows only its scope's tasks;
    inside, each read works."""
    failure = FAILURE
    backend = "/srv/ci/shop/backend"
    fix = {"recommended_adjustment": "Seed the neighbour's fixture first"}
    with http_in_thread(tmp_path, env=team_env(tmp_path, SCOPED_TEAM)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with http_client(url, RUNNER) as owner:
            their_escalation, their_failure = await start_victim(owner)
            # a task of the scope's own folder, whose id is outside its prefixes
            await owner.call("start_task", title="neighbour", task_id="neighbour", project=backend)
            await owner.call("record_failure", task_id="neighbour", **failure, **fix)
            await owner.call("raise_escalation", task_id="neighbour", reason="Which cache?")
        async with http_client(url, SCOPED) as scoped:
            await scoped.call("start_task", title="mine", task_id="ci-shop-1", project=backend)
            first = await scoped.call("record_failure", task_id="ci-shop-1", **failure)
            repeated = await scoped.call("record_failure", task_id="ci-shop-1", **failure)
            mine = await scoped.call("raise_escalation", task_id="ci-shop-1", reason="Which queue?")
            own_escalation, own_failure = mine["escalation"]["escalation_id"], first["failure"]["failure_id"]
            refused = [
                await read_refusal(scoped, f"failure://{their_failure}"),
                await read_refusal(scoped, f"escalation://{their_escalation}"),
                await read_refusal(scoped, "task://victim"),
                await read_refusal(scoped, "task://victim/feedback/test"),
                await prompt_refusal(scoped, "escalation_briefing", escalation_id=str(their_escalation)),
                await prompt_refusal(scoped, "resume_after_response", escalation_id=str(their_escalation)),
                await prompt_refusal(scoped, "retry_with_feedback", task_id="victim", step="test"),
                await prompt_refusal(scoped, "fix_review_findings", task_id="victim"),
            ]
            listed = await scoped.call("list_escalations", status="all")
            pending = resource_json(await scoped.client.read_resource("escalation://pending"))
            guidance = await scoped.call("get_guidance", task_id="ci-shop-1", scope="project", k=20)
            inside = [
                resource_json(await scoped.client.read_resource(f"failure://{own_failure}")),
                resource_json(await scoped.client.read_resource(f"escalation://{own_escalation}")),
                resource_json(await scoped.client.read_resource("task://ci-shop-1")),
            ]
            feedback = await scoped.client.read_resource("task://ci-shop-1/feedback/test")
            briefing = await scoped.client.get_prompt(
                "escalation_briefing", {"escalation_id": str(own_escalation)}
            )
        async with http_client(url, RUNNER) as owner:
            everyone = await owner.call("list_escalations", status="all")
            their_guidance = await owner.call("get_guidance", task_id="neighbour", scope="project", k=20)
    # a resource's refusal names it; a prompt's is the refusal itself
    uris = (f"failure://{their_failure}", f"escalation://{their_escalation}", "task://victim")
    uris += ("task://victim/feedback/test",)
    assert refused == [f"{uri}: {OUTSIDE_PREFIXES}" for uri in uris] + [OUTSIDE_PREFIXES] * 4
    assert not [text for text in refused if reprs_in(text)]
    # the lists name the scope's task only, and count only its escalations
    assert {s["task_id"] for s in listed["escalations"]} == {"ci-shop-1"}
    assert listed["total"] == 1
    assert [s["escalation_id"] for s in pending["escalations"]] == [own_escalation]
    assert {i["task_id"] for i in guidance["items"]} == {"ci-shop-1"}
    assert repeated["warning"].startswith("Warning: the same error 2 times")
    assert fix["recommended_adjustment"] not in repeated["warning"]
    # unscoped tokens see every task's, as before
    assert {s["task_id"] for s in everyone["escalations"]} == {"victim", "neighbour", "ci-shop-1"}
    assert {i["task_id"] for i in their_guidance["items"]} == {"neighbour", "ci-shop-1"}
    # inside the scope each read works
    assert inside[0]["failure"]["failure_id"] == own_failure
    assert inside[1]["escalation_id"] == own_escalation
    assert inside[2]["task"]["task_id"] == "ci-shop-1"
    assert "total is 3" in feedback.contents[0].text  # type: ignore[union-attr]
    assert briefing.messages


async def test_a_scoped_tokens_hook_warning_quotes_no_fix_of_another_task(tmp_path: Path) -> None:
    """The warning a repeated failure earns over the hook route names past fixes of the
    project's records: a scoped token's names none of a task outside its scope."""
    backend = "/srv/ci/shop/backend"
    fix = "Seed the neighbour's fixture first"

    def post(n: int) -> str:
        event = {**bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_warn_{n}"), "cwd": backend}
        headers = {"Authorization": f"Bearer {SCOPED}", "X-Escalation-Task": "ci-shop-1"}
        if n > 1:  # a change before each try: the hooks count a repeat after one
            edit = {**post_edit(f"{backend}/src/shop.py", f"toolu_edit_{n}"), "cwd": backend}
            with httpx2.Client(timeout=30) as client:
                assert client.post(f"{url}/hooks/claude-code", json=edit, headers=headers).status_code == 200
        with httpx2.Client(timeout=30) as client:
            answer = client.post(f"{url}/hooks/claude-code", json=event, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.text

    with http_in_thread(tmp_path, env=team_env(tmp_path, SCOPED_TEAM)) as port:
        url = f"http://127.0.0.1:{port}"
        answers = [await anyio.to_thread.run_sync(post, 1)]
        async with http_client(f"{url}/mcp", RUNNER) as owner:
            mine = await owner.call("get_task", task_id="ci-shop-1")
            seen = resource_json(await owner.client.read_resource("failure://F-1"))["failure"]
            # the same error, fixed before in another task of the same folder
            await owner.call("start_task", title="neighbour", task_id="neighbour", project=backend)
            await owner.call(
                "record_failure",
                task_id="neighbour",
                step="test",
                message=seen["message"],
                recommended_adjustment=fix,
            )
        answers += [await anyio.to_thread.run_sync(post, n) for n in (2, 3)]
    warned = [a for a in answers if "Warning: the same error" in a]
    assert mine["failure_records"] == 1
    assert warned, answers
    assert not any(fix in a for a in answers), warned


WIDE = "wide-" + "6" * 40
WIDE_TEAM = (
    TEAM
    + f"""
[[tokens]]
name = "ci-wide"
role = "agent"
token = "{WIDE}"
projects = ["/srv/p1", "/srv/p2", "/srv/p3", "/srv/p4", "/srv/p5", "/srv/p6", "/srv/p7"]
task_prefixes = ["api-", "ops-", "web-", "db-", "ui-", "ml-", "qa-"]
"""
)


async def test_a_wide_scope_is_named_in_a_few_words_over_mcp_and_the_hook_route(tmp_path: Path) -> None:
    """A scope of many prefixes and folders names the first five and how many more; a long
    folder is clipped; the agent over MCP and the host over the hook route read the same words."""
    long_folder = "/srv/" + "x" * 300

    def post(task: str, cwd: str) -> httpx2.Response:
        event = {**bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_wide"), "cwd": cwd}
        headers = {"Authorization": f"Bearer {WIDE}", "X-Escalation-Task": task}
        with httpx2.Client(timeout=30) as client:
            return client.post(f"{url}/hooks/claude-code", json=event, headers=headers)

    with http_in_thread(tmp_path, env=team_env(tmp_path, WIDE_TEAM)) as port:
        url = f"http://127.0.0.1:{port}"
        async with http_client(f"{url}/mcp", WIDE) as wide:
            over_mcp = [
                await wide.error("start_task", title="other", task_id="zz-1", project="/srv/p1"),
                await wide.error("start_task", title="elsewhere", task_id="api-1", project="/srv/other"),
            ]
        over_hooks = [
            await anyio.to_thread.run_sync(post, "zz-1", "/srv/p1"),
            await anyio.to_thread.run_sync(post, "api-1", long_folder),
        ]
    prefixes = "api-, ops-, web-, db-, ui- and 2 more"
    folders = "/srv/p1, /srv/p2, /srv/p3, /srv/p4, /srv/p5 and 2 more"
    outside_prefixes = (
        f"task zz-1 is outside this token's scope: it may report on tasks starting with {prefixes}"
    )
    assert over_mcp == [
        f"Error executing tool start_task: {outside_prefixes}",
        "Error executing tool start_task: project /srv/other is outside this token's scope:"
        f" it may report on projects in {folders}",
    ]
    assert [r.status_code for r in over_hooks] == [403, 403]
    assert over_hooks[0].text == f"{outside_prefixes}; not recorded\n"
    clipped = long_folder[:199] + "…"
    assert over_hooks[1].text == (
        f"project {clipped} is outside this token's scope: it may report on projects in {folders};"
        " not recorded\n"
    )
    assert not [text for text in [*over_mcp, *(r.text for r in over_hooks)] if reprs_in(text)]
