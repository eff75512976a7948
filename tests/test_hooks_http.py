"""A remote agent's Claude Code hooks posted to ``serve --transport http`` (its ``http`` hook type).

The server ``serve --transport http`` runs, on the test's store, answers
``POST /hooks/claude-code``; the same events run through the command form (``hook claude-code``)
on a second store of the same backend, and every answer must be the very JSON the command printed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.server.transport_security import TransportSecuritySettings

from conftest import connect
from hooks_support import (
    PROJECT,
    PYTEST_FAIL,
    bash_failure,
    claude,
    every_repeat,
    hook,
    pre_edit,
    pre_tool,
    run_cli,
    stop,
)
from http_support import AGENT_TOKEN, OPERATOR_TOKEN, TEST_TOKENS, http_in_thread
from mcp_server_escalation.adapters.http.auth import StaticTokenVerifier, load_tokens
from mcp_server_escalation.adapters.http.hooks import build_hook_app
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.settings import Settings

pytestmark = pytest.mark.both_backends

TASK = "remote-task"
SCOPE = ["src/**", "tests/**"]
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def served(tmp_path: Path, db_path: str) -> Iterator[str]:
    """The base URL of the HTTP server on the test's store (in a thread: the installed
    script's HTTP start is tested with the other ``serve`` tests), without the hooks' grace
    for repeated errors, as the command form here (``by_command``)."""
    with http_in_thread(tmp_path, "--db", db_path, "--config", every_repeat(tmp_path)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def command_store(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> str:
    """A second, empty store of the same backend, for the command form."""
    if backend == "sqlite":
        return str(tmp_path / "command.db")
    return str(request.getfixturevalue("pg_url"))


def post(
    url: str, event: dict[str, Any] | bytes, *, token: str | None = AGENT_TOKEN, **headers: str
) -> httpx2.Response:
    """One hook event, posted the way Claude Code's http hook posts it."""
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    sent = {**JSON, **({"Authorization": f"Bearer {token}"} if token else {}), **headers}
    with httpx2.Client(timeout=60) as client:
        return client.post(f"{url}/hooks/claude-code", content=body, headers=sent)


def answer_of(response: httpx2.Response) -> str:
    """The hook's answer as the host reads it: the body of a 200 (empty: no decision)."""
    assert response.status_code == 200, response.text
    return response.text


async def start(db: str, **extra: Any) -> None:
    async with connect(db) as agent:
        await agent.call("start_task", title="Remote work", task_id=TASK, scope=SCOPE, **extra)


async def by_command(db: str, event: dict[str, Any], tmp: Path) -> str:
    run = await hook(
        "claude-code", event, db=db, tmp=tmp, ESCALATION_TASK=TASK, ESCALATION_CONFIG=every_repeat(tmp)
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.rstrip("\n")


async def tasks_in(db: str, tmp: Path) -> list[str]:
    listed = await run_cli("--db", db, "tasks", "list", "--json", tmp=tmp)
    assert listed.returncode == 0, listed.stderr
    return sorted(task["task_id"] for task in json.loads(listed.stdout))


async def test_an_edit_out_of_scope_is_denied_in_json_as_the_command_denies_it(
    served: str, db_path: str, command_store: str, tmp_path: Path
) -> None:
    await start(db_path)
    await start(command_store)
    event = pre_edit(f"{PROJECT}/docs/notes.md", tool="Write")
    over_http = answer_of(post(served, event, **{"X-Escalation-Task": TASK}))
    denied = json.loads(over_http)["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    assert "docs/notes.md" in denied["permissionDecisionReason"]
    assert over_http == await by_command(command_store, event, tmp_path)
    # a read goes on during the pause it opened, as for the command form
    read = pre_tool("Read", {"file_path": f"{PROJECT}/src/calc.py"})
    assert answer_of(post(served, read, **{"X-Escalation-Task": TASK})) == ""


async def test_failures_record_escalate_and_hold_the_stop_as_the_command_form_does(
    served: str, db_path: str, command_store: str, tmp_path: Path
) -> None:
    await start(db_path)
    await start(command_store)
    events = [
        *(bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_fail_{n}") for n in range(3)),
        pre_tool("Bash", {"command": "npm install express"}),
        stop(),
    ]
    over_http = [answer_of(post(served, e, **{"X-Escalation-Task": TASK})) for e in events]
    by_hook = [await by_command(command_store, e, tmp_path) for e in events]
    assert over_http == by_hook
    escalated = json.loads(over_http[2])["hookSpecificOutput"]
    assert escalated["hookEventName"] == "PostToolUseFailure"
    assert "escalation 1" in escalated["additionalContext"]
    assert json.loads(over_http[3])["hookSpecificOutput"]["permissionDecision"] == "deny"
    # the operator answers; the next stop is held to deliver it, over HTTP as by the command
    for db in (db_path, command_store):
        respond = ("--db", db, "escalations", "respond", "1", "--guidance", "Use Decimal.")
        assert (await run_cli(*respond, tmp=tmp_path)).returncode == 0
    held = answer_of(post(served, stop(), **{"X-Escalation-Task": TASK}))
    assert held == await by_command(command_store, stop(), tmp_path)
    assert json.loads(held)["decision"] == "block"
    assert "Use Decimal." in json.loads(held)["reason"]


async def test_without_the_task_header_the_events_cwd_binds_the_session_task(
    served: str, db_path: str, tmp_path: Path
) -> None:
    answer_of(post(served, bash_failure("npm test", "Error: Cannot find module 'express'")))
    assert await tasks_in(db_path, tmp_path) == ["claude-code-abc123"]


async def test_a_missing_or_wrong_token_is_refused_with_401_and_nothing_is_stored(
    served: str, db_path: str, tmp_path: Path
) -> None:
    event = bash_failure("npm test", "Error: Cannot find module 'express'")
    for token in (None, "wrong-" + "x" * 40, "$ESCALATION_AGENT_TOKEN"):
        refused = post(served, event, token=token)
        assert refused.status_code == 401, token
        assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert answer_of(post(served, stop(), token=OPERATOR_TOKEN)) == ""  # either role's token, as /mcp
    assert await tasks_in(db_path, tmp_path) == []


async def test_an_oversized_event_is_refused_with_413_and_nothing_is_stored(
    served: str, db_path: str, tmp_path: Path
) -> None:
    huge = bash_failure("npm test", "Error: Cannot find module 'express'\n" + "x" * (8 * 1024 * 1024))
    refused = post(served, huge)
    assert refused.status_code == 413
    assert "8388608 bytes" in refused.text
    assert await tasks_in(db_path, tmp_path) == []


async def test_a_lone_surrogate_escape_is_recorded_and_answered_never_a_500(
    served: str, db_path: str, tmp_path: Path
) -> None:
    await start(db_path)
    events = [
        bash_failure("make", f"Error: bad byte \udc80 in build {n}", f"toolu_lone_{n}") for n in range(3)
    ]
    answers = [post(served, event, **{"X-Escalation-Task": TASK}) for event in events]
    assert [a.status_code for a in answers] == [200, 200, 200], answers[-1].text
    escalated = json.loads(answers[2].text)["hookSpecificOutput"]["additionalContext"]
    assert "escalation 1" in escalated
    async with connect(db_path) as agent:
        escalation = await agent.call("get_escalation", escalation_id=1)
    assert "bad byte \ufffd in build" in json.dumps(escalation, ensure_ascii=False)


async def test_bad_requests_say_what_is_wrong_and_change_nothing(
    served: str, db_path: str, tmp_path: Path
) -> None:
    event = bash_failure("npm test", "Error: Cannot find module 'express'")
    no_cwd = {k: v for k, v in event.items() if k != "cwd"}
    cases = [
        (post(served, no_cwd), 400, "cwd"),
        (post(served, {**event, "cwd": "project"}), 400, "cwd"),
        (post(served, b"{not json"), 400, "malformed JSON"),
        (post(served, event, **{"X-Escalation-Task": "$ESCALATION_TASK"}), 400, "allowedEnvVars"),
        (post(served, event, Host="evil.example"), 421, "Host"),
        (post(served, event, Origin="http://evil.example"), 403, "Origin"),
        (post(served, claude("UserPromptSubmit", prompt="hi")), 400, "UserPromptSubmit"),
    ]
    with httpx2.Client() as client:  # a host without an http hook type
        headers = {**JSON, "Authorization": f"Bearer {AGENT_TOKEN}"}
        cursor = client.post(f"{served}/hooks/cursor", content=json.dumps(event), headers=headers)
    cases.append((cursor, 404, "claude-code"))
    for response, status, said in cases:
        assert (response.status_code, said in response.text) == (status, True), response.text
    assert await tasks_in(db_path, tmp_path) == []


async def test_each_refusal_is_plain_words_from_the_prompts_with_names_on_one_clipped_line(
    served: str, db_path: str, tmp_path: Path
) -> None:
    event = bash_failure("npm test", "Error: Cannot find module 'express'")
    headers = {**JSON, "Authorization": f"Bearer {AGENT_TOKEN}"}
    long_host = "cur\nsor" + "x" * 200  # sent as %0A: one line, clipped to 80 characters
    with httpx2.Client() as client:
        hosts = [
            client.post(f"{served}/hooks/{name}", content=json.dumps(event), headers=headers)
            for name in ("cursor", long_host.replace("\n", "%0A"))
        ]
    huge = bash_failure("npm test", "x" * (8 * 1024 * 1024))
    refused = [
        *hosts,
        post(served, event, **{"X-Escalation-Task": "$ESCALATION_TASK"}),
        post(served, event, **{"X-Escalation-Task": "a task " + "y" * 200}),
        post(served, event, token=None),
        post(served, huge),
    ]
    clipped_host = ("cur sor" + "x" * 200)[:79] + "…"
    clipped_task = ("a task " + "y" * 200)[:79] + "…"
    bad_task = (
        "X-Escalation-Task: {} is not a task id (1-128 of A-Za-z0-9._:/@-); a value of "
        "$ESCALATION_TASK means the hook lacks ESCALATION_TASK in allowedEnvVars; not recorded\n"
    )
    assert [(r.status_code, r.text) for r in refused] == [
        (404, "no hooks over HTTP for cursor; hosts: claude-code\n"),
        (404, f"no hooks over HTTP for {clipped_host}; hosts: claude-code\n"),
        (400, bad_task.format("$ESCALATION_TASK")),
        (400, bad_task.format(clipped_task)),
        (401, "a hook needs Authorization: Bearer <token> (ESCALATION_AGENT_TOKEN)\n"),
        (413, "a hook event may be at most 8388608 bytes; not recorded\n"),
    ]
    assert not [r.text for r in refused if "'" in r.text]  # never a Python repr's quotes
    assert await tasks_in(db_path, tmp_path) == []


def reworded(tmp_path: Path) -> Path:
    """A copy of the packaged prompts whose hook route refusals say something else."""
    folder = tmp_path / "prompts"
    shutil.copytree(data_dir("prompts"), folder)
    hooks = folder / "hooks.toml"
    text = hooks.read_text(encoding="utf-8")
    for name in ("unknown_host", "no_token", "store_not_open"):
        text = text.replace(
            f'[templates.hook_http_{name}]\ntext = "', f'[templates.hook_http_{name}]\ntext = "ours: '
        )
    hooks.write_text(text, encoding="utf-8")
    return folder


async def test_a_prompts_folder_words_the_refusals_made_before_the_store_is_read(
    tmp_path: Path, db_path: str
) -> None:
    event = json.dumps(bash_failure("npm test", "Error: Cannot find module 'express'"))
    folder = reworded(tmp_path)
    url_of = "http://127.0.0.1:{}/hooks"
    bearer = {**JSON, "Authorization": f"Bearer {AGENT_TOKEN}"}
    with (
        http_in_thread(tmp_path, "--db", db_path, "--prompts", str(folder)) as port,
        httpx2.Client() as client,
    ):
        host = client.post(url_of.format(port) + "/cursor", content=event, headers=bearer)
        token = client.post(url_of.format(port) + "/claude-code", content=event, headers=JSON)
    assert host.text == "ours: no hooks over HTTP for cursor; hosts: claude-code\n"
    assert token.text == "ours: a hook needs Authorization: Bearer <token> (ESCALATION_AGENT_TOKEN)\n"


async def test_an_event_before_the_store_is_open_gets_no_decision_in_the_prompts_words(
    tmp_path: Path, db_path: str
) -> None:
    # The app as served, its lifespan (which opens the store) not yet run.
    settings = Settings.from_sources(db=db_path, prompts=str(reworded(tmp_path)), env={})
    no_host_check = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = build_hook_app(settings, StaticTokenVerifier(load_tokens(TEST_TOKENS)), no_host_check)
    headers = {**JSON, "Authorization": f"Bearer {AGENT_TOKEN}"}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://h") as client:
        early = await client.post("/hooks/claude-code", content=json.dumps(stop()), headers=headers)
    assert (early.status_code, early.text) == (503, "ours: the store is not open yet; no decision\n")
