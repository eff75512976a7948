"""API errors of the model provider inside the real Claude Code, served by the scripted model.

An error the CLI's own retry gets past never reaches a hook; one that persists ends the turn,
and Claude Code's ``StopFailure`` hook must record it as the host's error (docs/triggers.md,
"Host API errors"), even as ``claude -p`` exits at once. None of them pauses the project.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bounds import HUNG_AFTER
from host_support import claude_env, escalations, failures, run_claude, scratch_setup, tasks
from scripted_model import Fail, Say, Step, Turn, serve

pytestmark = pytest.mark.interop

# Each status as the API sends it: 401 a bad key, 429 a rate limit, 529 an overload, 500 a
# server error.
STATUSES = (401, 429, 529, 500)


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """(the project, a fresh HOME, the store), the hooks installed."""
    with scratch_setup(tmp_path) as made:
        yield made


def test_errors_the_retry_gets_past_reach_no_hook_and_pause_nothing(scratch: tuple[Path, Path, str]) -> None:
    project, home, db = scratch

    def policy(turn: Turn, history: list[Turn]) -> Step:
        if len(history) < len(STATUSES):
            return Fail(STATUSES[len(history)], f"scripted {STATUSES[len(history)]}")
        return Say("All done.")

    with serve(policy) as model:
        # one retry per error: each of the four fails once, then the fifth try is answered
        env = claude_env(home, model.url, CLAUDE_CODE_MAX_RETRIES=str(len(STATUSES)))
        ran, result = run_claude(project, env, "Say hello.")
    assert ran.returncode == 0, ran.stderr
    assert model.statuses == [*STATUSES, 200]
    assert (result["result"], result["is_error"]) == ("All done.", False)
    assert failures(db) == []
    assert escalations(db) == []
    assert all(task["status"] == "active" for task in tasks(db))


@pytest.mark.parametrize("status", STATUSES)
def test_an_error_that_persists_ends_the_turn_and_is_recorded(
    scratch: tuple[Path, Path, str], status: int
) -> None:
    project, home, db = scratch
    with serve(lambda *_: Fail(status, f"scripted {status}")) as model:
        env = claude_env(home, model.url, CLAUDE_CODE_MAX_RETRIES="1")
        ran, result = run_claude(project, env, "Say hello.")
    assert ran.returncode == 1  # the CLI says the run failed
    assert (result["api_error_status"], result["terminal_reason"]) == (status, "api_error")
    assert set(model.statuses) == {status}
    # The StopFailure hook runs detached from the host, which has exited by now: its record
    # comes after the run, once the hook process has started and written it.
    deadline = time.monotonic() + HUNG_AFTER
    while not failures(db) and time.monotonic() < deadline:
        time.sleep(0.1)
    recorded = [(f["tool_name"], f"scripted {status}" in f["message"]) for f in failures(db)]
    assert recorded == [("claude-code API", True)], "the StopFailure of the run was not recorded"
    assert all(task["status"] == "active" for task in tasks(db))  # no API error pauses a project
    # a bad key needs a person, without holding anything: one notice that blocks nothing
    expected = [("external_blocker", 0)] if status == 401 else []
    assert [(e["type"], e["blocking"]) for e in escalations(db)] == expected
