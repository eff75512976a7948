"""The console's doors over plain HTTP: who gets in, which requests are refused, 409 on a stale answer.

One console process (the installed script) for the module, on its own store; each test
raises its own escalation through a real server on the same file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, form_values, logged_in, running_console
from http_support import AGENT_TOKEN, OPERATOR_TOKEN
from in_process import run_main


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with running_console(tmp_path_factory.mktemp("console")) as running:
        yield running


async def ask(console: RunningConsole, task_id: str, question: str = "Which database?") -> int:
    """An ask_human escalation raised by an agent on the console's store; its id."""
    async with connect(console.db_path) as agent:
        await agent.call("start_task", title="Pick a database", task_id=task_id)
        raised = await agent.call(
            "raise_escalation", task_id=task_id, reason=question, options=["SQLite", "Postgres"]
        )
    return int(raised["escalation"]["escalation_id"])


def test_pages_without_the_session_cookie_send_the_browser_to_the_login(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url) as anonymous:
        for path, login in (("/", "/login"), ("/escalations/1", "/login?next=%2Fescalations%2F1")):
            answer = anonymous.get(path)
            assert answer.status_code == 303
            assert answer.headers["location"] == login
        assert anonymous.get("/events").status_code == 401


async def test_logging_in_from_an_escalations_link_lands_on_that_escalation(console: RunningConsole) -> None:
    escalation_id = await ask(console, "http-next")
    link = f"/escalations/{escalation_id}"
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as browser:
        sent = browser.get(link).headers["location"]
        login_page = browser.get(sent).text
        carried = re.search(r'name="next" value="([^"]*)"', login_page)
        assert carried is not None
        assert carried.group(1) == link
        answer = browser.post("/login", data={"token": OPERATOR_TOKEN, "next": carried.group(1)})
        assert answer.status_code == 303
        assert answer.headers["location"] == link
        assert "Which database?" in browser.get(answer.headers["location"]).text


def test_a_wrong_token_keeps_the_page_to_land_on_for_the_next_try(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as browser:
        refused = browser.post("/login", data={"token": "x" * 40, "next": "/escalations/7"})
    assert refused.status_code == 401
    assert 'name="next" value="/escalations/7"' in refused.text


OTHER_SITES = (
    "//evil.example",
    "/\\evil.example",
    "https://evil.example",
    "javascript:alert(document.cookie)",
    "%2F%2Fevil.example",
    "/%2F%2Fevil.example",
    "/%5Cevil.example",
    "/escalations/1\r\nSet-Cookie: taken=1",
)


def test_a_login_never_sends_the_browser_to_another_site(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as browser:
        for requested in OTHER_SITES:
            shown = browser.get("/login", params={"next": requested}).text
            assert 'name="next" value="/"' in shown, requested
            answer = browser.post("/login", data={"token": OPERATOR_TOKEN, "next": requested})
            assert answer.status_code == 303
            assert answer.headers["location"] == "/", requested
        # Encoded once more in the login page's own address: decoded once, still refused.
        shown = browser.get("/login?next=%252F%252Fevil.example").text
        assert 'name="next" value="/"' in shown


async def test_an_answer_without_the_session_cookie_is_refused_and_changes_nothing(
    console: RunningConsole,
) -> None:
    escalation_id = await ask(console, "http-no-cookie")
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as anonymous:
        answer = anonymous.post(
            f"/escalations/{escalation_id}/answer", data={"response_type": "guidance", "content": "x"}
        )
    assert answer.status_code == 401
    # The answer is lost with the session; the way back goes through the login to the same
    # escalation, not to the queue.
    assert f'href="/login?next=%2Fescalations%2F{escalation_id}"' in answer.text
    with logged_in(console) as operator:
        assert "waiting for you" in operator.get("/").text


def test_the_agent_token_does_not_open_the_console(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as client:
        answer = client.post("/login", data={"token": AGENT_TOKEN})
        assert answer.status_code == 403
        assert "agent token" in answer.text
        assert "set-cookie" not in answer.headers
        assert client.post("/login", data={"token": "x" * 40}).status_code == 401


def test_the_login_sets_an_httponly_samesite_strict_cookie_and_no_token_in_the_url(
    console: RunningConsole,
) -> None:
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as client:
        answer = client.post("/login", data={"token": OPERATOR_TOKEN})
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert OPERATOR_TOKEN not in cookie
    assert answer.headers["location"] == "/"


def test_the_session_cookie_is_not_marked_secure_without_the_option(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as client:
        cookie = client.post("/login", data={"token": OPERATOR_TOKEN}).headers["set-cookie"]
    assert "secure" not in cookie.lower()  # plain HTTP on loopback: a Secure cookie would never come back


def test_secure_cookie_marks_the_session_cookie_secure_for_a_tls_proxy(tmp_path: Path) -> None:
    with (
        console_in_thread(tmp_path, "--secure-cookie") as secured,
        httpx2.Client(base_url=secured.url, headers={"Origin": secured.url}) as client,
    ):
        login = client.post("/login", data={"token": OPERATOR_TOKEN})
        session = login.headers["set-cookie"]
        client.cookies.set("escalation_console", login.cookies["escalation_console"])
        csrf = form_values_of_nav(client.get("/").text)
        logout = client.post("/logout", data={"csrf": csrf})
    assert "Secure" in session
    assert "HttpOnly" in session
    assert "SameSite=strict" in session
    assert logout.status_code == 303
    assert "Secure" in logout.headers["set-cookie"]  # the deletion names the same cookie


def form_values_of_nav(page: str) -> str:
    """The CSRF token of the log-out form every page carries."""
    found = re.search(r'name="csrf" value="([^"]*)"', page)
    assert found, page
    return found.group(1)


def test_after_five_wrong_tokens_from_one_address_even_the_right_one_gets_429(tmp_path: Path) -> None:
    with (
        console_in_thread(tmp_path) as fresh,
        httpx2.Client(base_url=fresh.url, headers={"Origin": fresh.url}) as client,
    ):
        wrong = [client.post("/login", data={"token": f"{n}" * 40}).status_code for n in range(5)]
        held = client.post("/login", data={"token": OPERATOR_TOKEN})
    assert wrong == [401] * 5
    assert held.status_code == 429
    assert int(held.headers["retry-after"]) > 0
    assert "Too many wrong tokens" in held.text
    assert "set-cookie" not in held.headers
    assert _has_the_pages_security_headers(held)


def test_a_client_set_forwarded_for_neither_escapes_the_login_limit_nor_locks_out_another(
    tmp_path: Path,
) -> None:
    with (
        console_in_thread(tmp_path) as fresh,
        httpx2.Client(base_url=fresh.url, headers={"Origin": fresh.url}) as client,
    ):
        # a guesser naming a new address each time is still the one peer it connects from
        wrong = [
            client.post("/login", data={"token": f"{n}" * 40}, headers={"X-Forwarded-For": f"10.9.0.{n}"})
            for n in range(6)
        ]
        assert [answer.status_code for answer in wrong] == [401] * 5 + [429]
    with (
        console_in_thread(tmp_path / "second") as fresh,
        httpx2.Client(base_url=fresh.url, headers={"Origin": fresh.url}) as client,
    ):
        # and naming someone else's address does not lock them out: the peer is held back
        for n in range(5):
            client.post("/login", data={"token": f"{n}" * 40}, headers={"X-Forwarded-For": "10.9.9.9"})
        held = client.post("/login", data={"token": OPERATOR_TOKEN}, headers={"X-Forwarded-For": "10.9.9.9"})
        assert held.status_code == 429


def test_behind_a_trusted_proxy_the_limit_holds_back_the_address_the_proxy_names(tmp_path: Path) -> None:
    with (
        console_in_thread(tmp_path, "--trusted-proxy", "127.0.0.1") as fresh,
        httpx2.Client(base_url=fresh.url, headers={"Origin": fresh.url}) as client,
    ):
        for n in range(5):
            client.post("/login", data={"token": f"{n}" * 40}, headers={"X-Forwarded-For": "10.9.9.9"})
        guesser = client.post(
            "/login", data={"token": OPERATOR_TOKEN}, headers={"X-Forwarded-For": "10.9.9.9"}
        )
        someone_else = client.post(
            "/login", data={"token": OPERATOR_TOKEN}, headers={"X-Forwarded-For": "10.8.8.8"}
        )
    assert guesser.status_code == 429
    assert someone_else.status_code == 303


def test_a_request_with_a_foreign_origin_or_host_is_refused_on_every_route(console: RunningConsole) -> None:
    with logged_in(console) as operator:
        for path in ("/", "/login", "/static/console.js"):
            assert operator.get(path, headers={"Origin": "http://evil.example"}).status_code == 403
            assert operator.get(path, headers={"Host": "evil.example"}).status_code == 421
        refused = operator.post(
            "/login", data={"token": OPERATOR_TOKEN}, headers={"Origin": "http://evil.example"}
        )
        assert refused.status_code == 403


def _has_the_pages_security_headers(answer: httpx2.Response) -> bool:
    headers = answer.headers
    return (
        "default-src 'self'" in headers.get("content-security-policy", "")
        and "frame-ancestors 'none'" in headers.get("content-security-policy", "")
        and headers.get("x-content-type-options") == "nosniff"
        and headers.get("referrer-policy") == "same-origin"
        and headers.get("x-frame-options") == "DENY"
    )


def test_the_host_and_origin_refusals_carry_the_same_security_headers_as_the_pages(
    console: RunningConsole,
) -> None:
    with httpx2.Client(base_url=console.url) as client:
        page = client.get("/login")
        foreign_host = client.get("/login", headers={"Host": "evil.example"})
        foreign_origin = client.get("/login", headers={"Origin": "http://evil.example"})
        no_origin = client.post("/login", data={"token": "x"})
    assert _has_the_pages_security_headers(page)
    assert (foreign_host.status_code, foreign_origin.status_code, no_origin.status_code) == (421, 403, 403)
    assert _has_the_pages_security_headers(foreign_host)
    assert _has_the_pages_security_headers(foreign_origin)
    assert _has_the_pages_security_headers(no_origin)


def test_a_post_without_an_origin_header_is_refused(console: RunningConsole) -> None:
    with httpx2.Client(base_url=console.url) as client:
        assert client.post("/login", data={"token": OPERATOR_TOKEN}).status_code == 403


async def test_an_answer_without_the_csrf_token_is_refused(console: RunningConsole) -> None:
    escalation_id = await ask(console, "http-no-csrf")
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{escalation_id}").text
        revision = form_values(page)["revision"]
        for csrf in (None, "not-the-token"):
            data = {"response_type": "guidance", "content": "Use SQLite", "revision": revision}
            if csrf:
                data["csrf"] = csrf
            answer = operator.post(f"/escalations/{escalation_id}/answer", data=data)
            assert answer.status_code == 403
        page = operator.get(f"/escalations/{escalation_id}").text
        assert "Send the answer" in page
        assert f"keep waiting with get_escalation({escalation_id}" in page  # what the agent is told


async def test_a_second_answer_and_a_stale_answer_get_409(console: RunningConsole) -> None:
    escalation_id = await ask(console, "http-twice")
    with logged_in(console) as operator:
        shown = form_values(operator.get(f"/escalations/{escalation_id}").text)
        stale = {"csrf": shown["csrf"], "revision": str(int(shown["revision"]) - 1)}
        answer = operator.post(
            f"/escalations/{escalation_id}/answer",
            data={**stale, "response_type": "guidance", "content": "A"},
        )
        assert answer.status_code == 409
        assert "changed while you were reading it" in answer.text
        first = {**shown, "response_type": "guidance", "content": "Use SQLite"}
        assert operator.post(f"/escalations/{escalation_id}/answer", data=first).status_code == 303
        second = operator.post(
            f"/escalations/{escalation_id}/answer", data={**first, "content": "No, Postgres"}
        )
        assert second.status_code == 409
    async with connect(console.db_path, role="operator") as reader:
        got = await reader.call("get_escalation", escalation_id=escalation_id, wait_seconds=0)
    response = got["escalation"]["response"]
    assert response["content"] == "Use SQLite"
    assert response["responder"] == "console:operator"


async def test_the_responder_is_the_logged_in_operator_whatever_the_form_says(
    console: RunningConsole,
) -> None:
    escalation_id = await ask(console, "http-responder")
    with logged_in(console) as operator:
        shown = form_values(operator.get(f"/escalations/{escalation_id}").text)
        data = {**shown, "response_type": "guidance", "content": "Go", "responder": "operator:mallory"}
        assert operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code == 303
    async with connect(console.db_path, role="operator") as reader:
        got = await reader.call("get_escalation", escalation_id=escalation_id, wait_seconds=0)
    assert got["escalation"]["response"]["responder"] == "console:operator"


async def test_picking_one_of_the_agents_options_answers_with_its_text(console: RunningConsole) -> None:
    escalation_id = await ask(console, "http-option")
    with logged_in(console) as operator:
        shown = form_values(operator.get(f"/escalations/{escalation_id}").text)
        answer = operator.post(f"/escalations/{escalation_id}/answer", data={**shown, "option": "2"})
        assert answer.status_code == 303
        page = operator.get(f"/escalations/{escalation_id}").text
    assert "Postgres" in page
    assert "not yet" in page  # neither received nor acknowledged by the agent yet
    assert f"call acknowledge_response({escalation_id}) now" in page  # what the agent is told


def test_every_page_carries_a_strict_content_security_policy(console: RunningConsole) -> None:
    with logged_in(console) as operator:
        for path in ("/", "/login", "/static/console.js"):
            policy = operator.get(path).headers["content-security-policy"]
            assert policy.startswith("default-src 'self'")
            assert "unsafe-inline" not in policy
        page = operator.get("/").text
    assert "<script>" not in page  # the one script is the vendored file, by src
    assert 'style="' not in page


async def test_the_console_refuses_to_start_without_the_operator_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env["ESCALATION_AGENT_TOKEN"] = AGENT_TOKEN
    # In this process (in_process.py): the refusal is under test; the console's process is
    # started by the other tests here.
    code, _, err = await run_main(["console", "--db", str(tmp_path / "none.db")], env=env)
    assert code == 1
    assert b"ESCALATION_OPERATOR_TOKEN" in err


async def test_the_queue_filters_by_project_agent_and_type(console: RunningConsole) -> None:
    async with connect(console.db_path) as agent:
        await agent.call("start_task", title="A", task_id="filter-a", project="alpha", agent_id="ann")
        await agent.call("raise_escalation", task_id="filter-a", reason="Question from alpha")
        await agent.call("start_task", title="B", task_id="filter-b", project="beta", agent_id="bob")
        await agent.call(
            "raise_escalation", task_id="filter-b", reason="Blocked in beta", kind="system_error"
        )
    with logged_in(console) as operator:
        by_project = operator.get("/", params={"project": "alpha"}).text
        by_agent = operator.get("/", params={"agent": "bob"}).text
        by_type = operator.get("/", params={"type": "system_error", "agent": "bob"}).text
        nothing = operator.get("/", params={"type": "repeated_error", "agent": "bob"}).text
    assert "filter-a" in by_project
    assert "filter-b" not in by_project
    assert "filter-b" in by_agent
    assert "filter-a" not in by_agent
    assert "filter-b" in by_type
    assert "Nothing is waiting for you." in nothing


async def test_an_answer_the_agent_has_not_acknowledged_stays_in_the_queue_marked_as_such(
    console: RunningConsole,
) -> None:
    escalation_id = await ask(console, "queue-answered")
    with logged_in(console) as operator:
        shown = form_values(operator.get(f"/escalations/{escalation_id}").text)
        data = {**shown, "response_type": "guidance", "content": "SQLite"}
        assert operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code == 303
        queue = operator.get("/", params={"agent": "agent"}).text
        row = next(line for line in queue.splitlines() if "queue-answered" in line)
        assert "answered (guidance), not yet acknowledged by the agent" in row
        async with connect(console.db_path) as agent:
            await agent.call("get_escalation", escalation_id=escalation_id)
            await agent.call("acknowledge_response", escalation_id=escalation_id)
        assert "queue-answered" not in operator.get("/").text


async def test_a_repeated_error_shows_each_occurrence_with_file_line_and_attempted_action(
    console: RunningConsole,
) -> None:
    async with connect(console.db_path) as agent:
        await agent.call("start_task", title="Fix the parser", task_id="evidence-occurrences")
        for attempt, line in (("added a None check", 40), ("cast to str", 41), ("rewrote parse()", 57)):
            result = await agent.call(
                "record_failure",
                task_id="evidence-occurrences",
                message="TypeError: unsupported operand type(s) for +: 'int' and 'str'",
                file="src/parse.py",
                line=line,
                attempted_action=attempt,
            )
    escalation_id = result["escalation"]["escalation_id"]
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{escalation_id}").text
    assert "<th>Place</th><th>Attempted action</th>" in page
    for place, attempt in (("src/parse.py:40", "added a None check"), ("src/parse.py:57", "rewrote parse()")):
        assert f"<td><code>src/<wbr>{place[4:]}</code></td><td>{attempt}</td>" in page
    # the error once: the headline, not once more per occurrence
    assert page.count("unsupported operand type(s) for +: &#39;int&#39; and &#39;str&#39;") == 1
    assert "repeated error" in page
    assert "Threshold: same error repeated 3" in page


async def test_approving_from_the_page_sets_the_file_limit_and_widens_the_scope(
    console: RunningConsole,
) -> None:
    escalation_id = await ask(console, "approve-page", "May I touch the migrations too?")
    with logged_in(console) as operator:
        shown = form_values(operator.get(f"/escalations/{escalation_id}").text)
        data = {
            **shown,
            "response_type": "approve",
            "file_limit": "12",
            "add_scope": "migrations/**\ndocs/*.md",
        }
        assert operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code == 303
    async with connect(console.db_path, role="operator") as reader:
        got = await reader.call("get_escalation", escalation_id=escalation_id, wait_seconds=0)
    response = got["escalation"]["response"]
    assert response["response_type"] == "approve"
    assert response["new_file_limit"] == 12
    assert response["add_scope"] == ["docs/*.md", "migrations/**"]


async def test_the_task_page_shows_what_the_agent_is_told_its_escalations_and_test_history(
    console: RunningConsole,
) -> None:
    escalation_id = await ask(console, "task-page", "Which port?")
    async with connect(console.db_path) as agent:
        await agent.call("start_task", title="Other", task_id="task-page-runs")
        await agent.call("report_progress", task_id="task-page-runs", tests_passed=3, tests_failed=1)
    with logged_in(console) as operator:
        page = operator.get("/tasks/task-page").text
        runs = operator.get("/tasks/task-page-runs").text
        missing = operator.get("/tasks/no-such-task")
        queue = operator.get("/", params={"agent": "agent"}).text
    assert "Task task-page: Pick a database" in page
    named = f"#{escalation_id} question from the agent, pending"
    assert f'<a href="/escalations/{escalation_id}">{named}</a>' in page
    assert "pause" in page  # the directive: the question holds the task
    assert "<svg" in runs  # the pass-rate history as bars
    assert "75%" in runs
    assert missing.status_code == 404
    assert '<a href="/tasks/task-page">task-page</a>' in queue


async def test_the_answered_page_lists_answers_and_the_stats_page_counts_them(
    console: RunningConsole,
) -> None:
    escalation_id = await ask(console, "answered-page")
    with logged_in(console) as operator:
        shown = form_values(operator.get(f"/escalations/{escalation_id}").text)
        data = {**shown, "response_type": "terminate", "content": "Not needed"}
        assert operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code == 303
        answered = operator.get("/answered").text
        stats = operator.get("/stats").text
    assert f'<a href="/escalations/{escalation_id}">{escalation_id}</a>' in answered
    assert "<td>resolved with termination</td>" in answered
    assert "<th>resolved with termination</th>" in stats
    assert "<td>question from the agent</td>" in stats
    assert "<h2>Time to answer</h2>" in stats
    assert "<title>≤ 5 min:" in stats  # answered at once: the first bar
