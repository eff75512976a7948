"""What a person reads when a hook event cannot be used: words from ``prompts/hooks.toml``.

The command hook says it in one line on stderr, the hook route over HTTP in the body of its
400 (and of its 500 when the server itself failed); names as sent, on one clipped line;
where malformed JSON stops being JSON in line and column, never a Python exception's text
or a repr's quotes. A ``--prompts`` folder rewords all of them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import httpx2

from hooks_support import bash_failure, claude, hook, hook_process
from http_support import AGENT_TOKEN, TEST_TOKENS, http_in_thread, start_http, stop_http
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.hooks.spool import Spool, Spooled, spool_folder

PREFIX = "mcp-server-escalation hook: "
LONG_NAME = "Note\nfication " + "x" * 200  # sent on two lines, and longer than a line may be
CLIPPED_NAME = ("Note fication " + "x" * 200)[:79] + "…"
NO_CWD = (
    "cwd: the event names no absolute working directory (a path starting with / of at most "
    "4096 characters); a remote agent's project is its cwd; no decision"
)
HEADERS = {"Content-Type": "application/json", "Authorization": f"Bearer {AGENT_TOKEN}"}

# (stdin or body, what the person reads), for the command hook and the route alike
BAD_EVENTS: list[tuple[bytes, str]] = [
    (b"{not json", "malformed JSON in the event at line 1, column 2; ignored"),
    (b'{\n  "a": 1,\n  oops}', "malformed JSON in the event at line 3, column 3; ignored"),
    (b"", "malformed JSON in the event at line 1, column 1; ignored"),
    (b"\xff\xfe{}", "the event is not UTF-8 text (its byte 1 is not); ignored"),
    (b"[" * 200_000 + b"]" * 200_000, "malformed JSON in the event: nested too deeply to read; ignored"),
    (
        b'{"exit_code": ' + b"1" * 5000 + b"}",
        "the event's JSON holds a value the hook cannot read (such as a number thousands of digits long); "
        "ignored",
    ),
    (b"[1, 2, 3]", "the event is not a JSON object; ignored"),
    (
        json.dumps(claude(LONG_NAME)).encode(),
        f"event {CLIPPED_NAME} is not one this hook handles; no decision",
    ),
    (json.dumps({"tool_name": "Edit"}).encode(), "the event names no hook event; no decision"),
]


def reworded(tmp_path: Path, *prefixes: str) -> Path:
    """A copy of the packaged prompts whose templates named ``prefix...`` begin with "ours: "."""
    folder = tmp_path / "prompts"
    shutil.copytree(data_dir("prompts"), folder)
    hooks = folder / "hooks.toml"
    text = hooks.read_text(encoding="utf-8")
    for prefix in prefixes:
        text = re.sub(rf'(\[templates\.{prefix}\w*\]\ntext = ")', r"\1ours: ", text)
    hooks.write_text(text, encoding="utf-8")
    return folder


async def test_the_installed_hook_says_what_is_wrong_with_its_stdin_in_words(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    for raw, said in (BAD_EVENTS[0], BAD_EVENTS[-2]):  # two real processes (malformed, a long name)
        run = await hook_process("claude-code", raw, db=db, tmp=tmp_path)
        assert (run.returncode, run.stdout, run.stderr) == (0, "", PREFIX + said + "\n")
    for raw, said in BAD_EVENTS:
        run = await hook("claude-code", raw, db=db, tmp=tmp_path)
        assert (run.returncode, run.stdout, run.stderr) == (0, "", PREFIX + said + "\n")
    huge = await hook("claude-code", b" " * (64 * 1024 * 1024 + 1), db=db, tmp=tmp_path)
    assert huge.stderr == PREFIX + "the event is larger than 67108864 bytes; ignored\n"


async def test_a_prompts_folder_words_what_the_hook_says_of_an_unusable_event(tmp_path: Path) -> None:
    folder = str(reworded(tmp_path, "hook_input_"))
    db = str(tmp_path / "s.db")
    run = await hook_process("claude-code", b"{not json", db=db, tmp=tmp_path, ESCALATION_PROMPTS=folder)
    assert run.stderr == PREFIX + "ours: malformed JSON in the event at line 1, column 2; ignored\n"
    unknown = json.dumps(claude("Notification")).encode()
    run = await hook("claude-code", unknown, db=db, tmp=tmp_path, ESCALATION_PROMPTS=folder)
    assert run.stderr == PREFIX + "ours: event Notification is not one this hook handles; no decision\n"


async def test_the_hook_route_answers_an_unusable_event_with_400_in_words(tmp_path: Path) -> None:
    no_cwd = {k: v for k, v in bash_failure("npm test", "Error: boom").items() if k != "cwd"}
    bodies = [*(raw for raw, _ in BAD_EVENTS), json.dumps(no_cwd).encode()]
    with http_in_thread(tmp_path, "--db", str(tmp_path / "s.db")) as port, httpx2.Client() as client:
        url = f"http://127.0.0.1:{port}/hooks/claude-code"
        answers = [client.post(url, content=body, headers=HEADERS) for body in bodies]
    assert [(a.status_code, a.text) for a in answers] == [
        *((400, said + "\n") for _, said in BAD_EVENTS),
        (400, NO_CWD + "\n"),
    ]


async def test_a_prompts_folder_words_the_hook_routes_400(tmp_path: Path) -> None:
    folder = reworded(tmp_path, "hook_input_")
    options = ("--db", str(tmp_path / "s.db"), "--prompts", str(folder))
    with http_in_thread(tmp_path, *options) as port, httpx2.Client() as client:
        url = f"http://127.0.0.1:{port}/hooks/claude-code"
        answer = client.post(url, content=b"[1]", headers=HEADERS)
    assert (answer.status_code, answer.text) == (400, "ours: the event is not a JSON object; ignored\n")


async def test_a_server_failure_is_a_500_in_words_and_the_error_goes_to_the_log(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    folder = reworded(tmp_path, "hook_http_failed", "hook_http_no_decision")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env.update(TEST_TOKENS)
    process, port, log = start_http(tmp_path, "--db", str(db), "--prompts", str(folder), env=env)
    try:
        url = f"http://127.0.0.1:{port}/hooks/claude-code"
        with httpx2.Client(timeout=30) as client:
            first = client.post(
                url, content=json.dumps(bash_failure("npm test", "Error: one")), headers=HEADERS
            )
            # A store someone broke under the running server, in a way no code path expects
            # (no database error: a database's own is the store's failure, a 503).
            with sqlite3.connect(db) as conn:
                conn.execute("UPDATE tasks SET thresholds_json = '{not json'")
            event = json.dumps(bash_failure("npm test", "Error: boom"))
            failed = client.post(url, content=event, headers=HEADERS)
    finally:
        stop_http(process)
    assert first.status_code == 200
    said = "ours: ours: the server failed to handle the event (its log says why); no decision\n"
    assert (failed.status_code, failed.text) == (500, said)
    logged = " ".join(log.read_text(encoding="utf-8").split())  # its lines wrapped to a width
    assert "hook event over HTTP failed" in logged
    assert "validation error for Thresholds" in logged  # the operator's log has the error, the body not


async def test_a_database_error_is_the_stores_failure_a_503_and_its_words_go_to_the_log(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env.update(TEST_TOKENS)
    process, port, log = start_http(tmp_path, "--db", str(db), env=env)
    try:
        with sqlite3.connect(db) as conn:  # a store someone broke under the running server
            conn.execute("DROP TABLE tasks")
        event = json.dumps(bash_failure("npm test", "Error: boom"))
        with httpx2.Client(timeout=30) as client:
            failed = client.post(f"http://127.0.0.1:{port}/hooks/claude-code", content=event, headers=HEADERS)
    finally:
        stop_http(process)
    said = (
        "the store failed to record the event (a database error, not a bug in the server);"
        " the server's log says why; no decision\n"
    )
    assert (failed.status_code, failed.text) == (503, said)
    logged = " ".join(log.read_text(encoding="utf-8").split())  # its lines wrapped to a width
    assert "its store failed: OperationalError: no such table: tasks" in logged
    assert "Traceback" not in logged  # no bug of ours: one line, not a traceback


async def test_a_spooled_event_that_cannot_be_used_is_removed_with_words_in_the_log(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), "ESCALATION_HOOK_RELAY": "off"}
    folder = spool_folder(db, state)
    Spool(folder).keep(Spooled("claude-code", "{not json", {}, str(tmp_path)))  # spooled, then damaged
    report = bash_failure("npm test", "Error: boom", "toolu_after_spool")
    run = await hook_process("claude-code", report, db=db, tmp=tmp_path, **state)
    said = "can no longer be handled (malformed JSON in the event at line 1, column 2; ignored); removed"
    assert (run.returncode, run.stdout) == (0, "")
    assert said in run.stderr  # the hook's log is its stderr, one line
    assert list(folder.glob("*.json")) == []
