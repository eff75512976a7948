"""The loop inside the real Claude Code: the pinned CLI, headless, with a scripted model.

Each scenario runs ``claude -p`` in a scratch git repository whose test fails, in a fresh
HOME, with our hooks installed by ``hook install claude-code`` (and, where named, our MCP
server), its model the scripted Messages API of ``scripted_model`` on 127.0.0.1. A policy
per scenario plays a compliant agent: it reads each request and chooses the next call. The
tests assert what the model receives in its next request and what the store holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host_support import (
    FIXED,
    PYTEST,
    claude_env,
    escalations,
    respond,
    run_claude,
    scratch_setup,
    tasks,
)
from scripted_model import Say, Step, ToolCall, Turn, serve

pytestmark = pytest.mark.interop

GUIDANCE = "add must add: return a + b"
# The words the model reads, from prompts/hooks.toml: an escalation raised after a tool
# call, a call denied while it waits, a call held back to deliver the answer.
RAISED = "mcp-server-escalation raised escalation"
DENIED = "Blocked by mcp-server-escalation: escalation"
DELIVERED = "held back to deliver the operator's answer"
REFUSED = "Blocked by mcp-server-escalation"  # any refusal: a pause's, a terminated task's
# What a stuck loop of test runs that changes no file fires first with the default settings
# (a repeated error waits out the hooks' grace of 20 calls).
LOOP_TYPES = {"no_file_progress", "repeated_error"}


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """(the project, a fresh HOME, the store), the hooks installed."""
    with scratch_setup(tmp_path) as made:
        yield made


def stuck_then_fixing(project: Path) -> object:
    """A model stuck on the failing test: it reruns it, overlooks the escalation's notice
    once (it runs the test again), obeys the deny (tells the user it waits), and once the
    operator's answer reaches it reads the file, fixes it and runs the test."""
    calc = str(project / "src" / "calc.py")

    def policy(turn: Turn, history: list[Turn]) -> Step:
        last = turn.last_text
        if DELIVERED not in turn.all_text:
            if DENIED in last or "Do not stop yet" in last:
                return Say("Escalation 1 needs an answer from the operator; I am waiting for it.")
            return ToolCall("Bash", {"command": PYTEST, "description": "Run the tests"})
        if DELIVERED in last:
            return ToolCall("Read", {"file_path": calc})
        if "return a - b" in last:
            return ToolCall("Edit", {"file_path": calc, "old_string": "a - b", "new_string": "a + b"})
        if "passed" in last and "failed" not in last:
            return Say("Fixed: add adds, and the test passes.")
        return ToolCall("Bash", {"command": PYTEST, "description": "Run the tests"})

    return policy


def test_hooks_only_a_stuck_loop_is_paused_denied_and_resumed_with_the_answer(
    scratch: tuple[Path, Path, str],
) -> None:
    project, home, db = scratch
    with serve(stuck_then_fixing(project)) as model:  # type: ignore[arg-type]
        env = claude_env(home, model.url)
        ran, result = run_claude(project, env, "Fix the failing test.")
        assert ran.returncode == 0, ran.stderr
        session = result["session_id"]

        # the loop of failing runs paused the task, and the next run was denied
        (held,) = escalations(db)
        assert (held["escalation_id"], held["status"]) == (1, "pending")
        assert held["type"] in LOOP_TYPES
        assert [t["status"] for t in tasks(db)] == ["paused"]
        raised = [turn for turn in model.turns if RAISED in turn.last_text]
        denied = [turn for turn in model.turns if DENIED in turn.last_text]
        assert len(raised) == len(denied) == 1
        assert "escalations show 1" in denied[0].last_text  # a hooks-only agent tells the user
        assert model.turns.index(denied[0]) == model.turns.index(raised[0]) + 1
        before = len(model.turns)

        respond(db, home, 1, "--guidance", GUIDANCE)
        ran, result = run_claude(project, env, "Go on.", "--resume", session)
        assert ran.returncode == 0, ran.stderr

    resumed = model.turns[before:]
    # the first tool call of the resumed session was held back to deliver the answer
    delivery = next(turn for turn in resumed if DELIVERED in turn.last_text)
    assert GUIDANCE in delivery.last_text
    assert (project / "src" / "calc.py").read_text(encoding="utf-8") == FIXED
    assert "1 passed" in resumed[-1].last_text
    assert result["result"].startswith("Fixed")
    (escalation,) = escalations(db)
    assert (escalation["status"], escalation["response_content"]) == ("resolved", GUIDANCE)
    assert escalation["acknowledged_at"] is not None
    assert [t["status"] for t in tasks(db)] == ["active"]


# A quick pause, for the scenarios about what follows it: two test runs that change no file.
QUICK_PAUSE = "[thresholds]\nno_file_changes_after_attempts = 2\nwarn_before = 0\n"
TERMINATION = "Wrong approach: leave this task."


def stubborn(project: Path) -> Any:
    """A model that reruns the failing test whatever it is told, and says it stops when a
    call is denied."""

    def policy(turn: Turn, history: list[Turn]) -> Step:
        if REFUSED in turn.last_text:
            return Say("Stopping: the hooks refused the call.")
        return ToolCall("Bash", {"command": PYTEST, "description": "Run the tests"})

    return policy


def test_halt_while_pending_stops_the_host_at_the_first_call_the_pause_holds(tmp_path: Path) -> None:
    with scratch_setup(tmp_path, QUICK_PAUSE + "[hooks]\nhalt_while_pending = true\n") as (project, home, db):
        with serve(stubborn(project)) as model:
            ran, result = run_claude(project, claude_env(home, model.url), "Fix the failing test.")
        (held,) = escalations(db)
        assert (held["status"], [t["status"] for t in tasks(db)]) == ("pending", ["paused"])
    assert ran.returncode == 0, ran.stderr
    # the call after the escalation was the last: the host stopped and asked the model nothing more
    raised = next(i for i, turn in enumerate(model.turns) if RAISED in turn.last_text)
    assert len(model.turns) == raised + 1
    assert not any(DENIED in turn.last_text for turn in model.turns)
    assert result["terminal_reason"] == "hook_stopped"  # what a CI run's JSON result says of the halt


def test_a_termination_given_with_the_cli_stops_the_resumed_agent_and_holds_after(tmp_path: Path) -> None:
    with scratch_setup(tmp_path, QUICK_PAUSE) as (project, home, db):
        with serve(stubborn(project)) as model:
            env = claude_env(home, model.url)
            ran, result = run_claude(project, env, "Fix the failing test.")
            assert ran.returncode == 0, ran.stderr
            respond(db, home, 1, "--terminate", TERMINATION)
            before = len(model.turns)
            ran, _ = run_claude(project, env, "Go on.", "--resume", result["session_id"])
            assert ran.returncode == 0, ran.stderr
            delivered = len(model.turns)
            ran, _ = run_claude(project, env, "Go on.", "--resume", result["session_id"])
        (escalation,) = escalations(db)
        assert (escalation["status"], escalation["response_type"]) == (
            "resolved_with_termination",
            "terminate",
        )
        assert [t["status"] for t in tasks(db)] == ["terminated_by_human"]
    # the resumed session was told at its start, and its first call stopped the host
    assert delivered == before + 1
    assert TERMINATION in model.turns[before].last_text
    # a later session is refused every change, and told why
    after = model.turns[delivered:]
    assert len(after) == 2
    assert REFUSED in after[1].last_text
    assert "stop all work on it and make no further changes" in after[1].last_text
