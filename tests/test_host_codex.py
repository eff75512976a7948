"""The loop inside the real Codex CLI: the pinned npm release, headless, with a scripted model.

``codex exec`` runs in a scratch git repository whose test fails, in a fresh HOME, with our
hooks installed by ``hook install codex --user``; its model is a custom provider whose base
URL is the scripted Responses API of ``scripted_model`` on 127.0.0.1. A stuck loop of test
runs is paused, the next run denied, and the operator's answer given with our CLI reaches the
resumed session, whose patch (``apply_patch``, gated and recorded) fixes the bug.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hooks_support import stop_daemons
from host_support import (
    FIXED,
    PYTEST,
    codex_config,
    escalations,
    fresh_home,
    install_codex_hooks,
    lingering,
    respond,
    rows,
    run_codex,
    scratch_project,
    tasks,
)
from scripted_model import Say, Step, ToolCall, Turn, serve

pytestmark = pytest.mark.interop

GUIDANCE = "add must add: return a + b"
DENIED = "Blocked by mcp-server-escalation: escalation"
DELIVERED = "held back to deliver the operator's answer"
QUICK_PAUSE = "[thresholds]\nno_file_changes_after_attempts = 2\nwarn_before = 0\n"
PATCH = (
    "*** Begin Patch\n*** Update File: src/calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch\n"
)


def stuck_then_patching() -> Any:
    """A model that reruns the failing test until a call is denied, says it waits, and once
    the answer reaches it patches the file and runs the test."""

    def policy(turn: Turn, history: list[Turn]) -> Step:
        last = turn.last_text
        called = history[-1].reply if history else None
        previous = called.name if isinstance(called, ToolCall) else None
        if DELIVERED not in turn.all_text:
            if DENIED in last:
                return Say("Escalation 1 needs an answer from the operator; I am waiting for it.")
            return ToolCall("exec_command", {"cmd": PYTEST})
        if previous == "apply_patch":
            return ToolCall("exec_command", {"cmd": PYTEST})
        if previous == "exec_command" and "1 passed" in last:
            return Say("Fixed: add adds, and the test passes.")
        if DELIVERED in last:
            return ToolCall("apply_patch", PATCH)
        return ToolCall("exec_command", {"cmd": PYTEST})

    return policy


def test_codex_a_stuck_loop_is_paused_denied_and_resumed_with_the_answer(tmp_path: Path) -> None:
    home = fresh_home()
    project = scratch_project(tmp_path)
    db = str(tmp_path / "escalations.db")
    config = tmp_path / "config.toml"
    config.write_text(QUICK_PAUSE, encoding="utf-8")
    install_codex_hooks(home, db, str(config))
    try:
        with serve(stuck_then_patching()) as model:
            codex_config(home, model.url)
            ran, events = run_codex(project, home, "Fix the failing test.")
            assert ran.returncode == 0, ran.stderr
            (session,) = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
            (held,) = escalations(db)
            assert (held["type"], held["status"]) == ("no_file_progress", "pending")
            assert [t["status"] for t in tasks(db)] == ["paused"]
            denied = [turn for turn in model.turns if DENIED in turn.last_text]
            assert len(denied) == 1
            before = len(model.turns)

            respond(db, home, 1, "--guidance", GUIDANCE)
            ran, events = run_codex(project, home, "resume", session, "Go on.")
            assert ran.returncode == 0, ran.stderr
    finally:
        others = lingering(db)
        stop_daemons(home / "run" / "mcp-server-escalation")
    assert not others, f"still running a minute after the host exited: {others}"
    resumed = model.turns[before:]
    delivery = next(turn for turn in resumed if DELIVERED in turn.last_text)
    assert GUIDANCE in delivery.last_text
    assert (project / "src" / "calc.py").read_text(encoding="utf-8") == FIXED
    assert "1 passed" in resumed[-1].last_text
    (escalation,) = escalations(db)
    assert (escalation["status"], escalation["response_content"]) == ("resolved", GUIDANCE)
    assert escalation["acknowledged_at"] is not None
    assert [t["status"] for t in tasks(db)] == ["active"]
    # the patch was gated and recorded as the task's edit of the file
    edited = {(r["path"], r["source"]) for r in rows(db, "SELECT path, source FROM modified_files")}
    assert ("src/calc.py", "check_edit") in edited
