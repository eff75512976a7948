"""The loop inside the real Claude Code with our MCP server: the wait, the answer, the fix.

Claude Code defers MCP tools behind its ``ToolSearch``: the model must load
``get_escalation``'s schema before it can call it, and must be let through while the task
waits. The scripted model (``scripted_model``) plays the agent; the hooks are installed by
``hook install claude-code`` and the server named by ``--mcp-config``, both on one store.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host_support import (
    FIXED,
    PYTEST,
    claude_env,
    escalations,
    mcp_config,
    respond,
    result_of,
    scratch_setup,
    start_claude,
    tasks,
)
from scripted_model import Say, Step, ToolCall, Turn, serve

pytestmark = pytest.mark.interop

GUIDANCE = "add must add: return a + b"
RAISED = "mcp-server-escalation raised escalation"
DENIED = "Blocked by mcp-server-escalation"
GET = "mcp__escalation__get_escalation"
ACK = "mcp__escalation__acknowledge_response"
# The target: an answer reaches a waiting model within 1 s of being given. The bound
# asserted leaves room for a loaded machine; the figure is printed (pytest -rP shows it).
ANSWER_BOUND = 2.0


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """(the project, a fresh HOME, the store), the hooks installed."""
    with scratch_setup(tmp_path) as made:
        yield made


def waiting_agent(project: Path) -> Any:
    """A model that reruns the failing test until an escalation is raised, then does as it
    is told: loads the escalation tools with ToolSearch, waits with get_escalation until the
    answer comes, acknowledges it, fixes the file and runs the test."""
    calc = str(project / "src" / "calc.py")

    def policy(turn: Turn, history: list[Turn]) -> Step:
        last = turn.last_text
        called = history[-1].reply if history else None
        previous = called.name if isinstance(called, ToolCall) else None
        if DENIED in last and previous == "ToolSearch":
            return Say("My host refused ToolSearch, so I cannot reach get_escalation to wait.")
        if RAISED in last:
            return ToolCall("ToolSearch", {"query": f"select:{GET},{ACK}", "max_results": 2})
        if previous == "ToolSearch" or (previous == GET and GUIDANCE not in last):
            return ToolCall(GET, {"escalation_id": 1, "wait_seconds": 4})
        if previous == GET:
            return ToolCall(ACK, {"escalation_id": 1, "note": "I will make add add."})
        if previous == ACK:
            return ToolCall("Read", {"file_path": calc})
        if previous == "Read":
            return ToolCall("Edit", {"file_path": calc, "old_string": "a - b", "new_string": "a + b"})
        if previous == "Bash" and "passed" in last and "failed" not in last:
            return Say("Fixed: add adds, and the test passes.")
        return ToolCall("Bash", {"command": PYTEST, "description": "Run the tests"})

    return policy


def test_the_wait_over_mcp_behind_tool_search_gets_the_answer_and_the_fix(
    scratch: tuple[Path, Path, str], tmp_path: Path
) -> None:
    project, home, db = scratch
    with serve(waiting_agent(project)) as model:
        env = claude_env(home, model.url)
        claude = start_claude(
            project, env, "Fix the failing test.", "--mcp-config", str(mcp_config(tmp_path, db))
        )
        try:
            waiting = model.wait_until(
                lambda turns: any(_waits(t) for t in turns) or claude.poll() is not None, 90
            )
            assert waiting, "the agent neither waited on get_escalation nor ended"
            assert claude.poll() is None, "the agent ended without waiting on get_escalation"
            time.sleep(0.5)  # the call is under way: the server holds it until the answer
            respond(db, home, 1, "--guidance", GUIDANCE)
            given = time.monotonic()
            assert model.wait_until(lambda turns: any(GUIDANCE in t.last_text for t in turns), 30)
        finally:
            code, result, err = result_of(claude)
    assert code == 0, err

    searched = model.called("ToolSearch")
    assert len(searched) == 1
    after_search = model.turns[model.turns.index(searched[0]) + 1]
    assert DENIED not in after_search.last_text  # let through while the task waited
    assert GET in after_search.tools  # the schema is loaded

    reached = next(t for t in model.turns if GUIDANCE in t.last_text)
    latency = reached.at - given
    sys.stdout.write(
        f"over MCP, the answer reached the model {latency:.3f} s after it was given\n"
    )  # -rP shows it
    assert latency < ANSWER_BOUND, f"the answer reached the model {latency:.2f} s after it was given"

    acknowledged = model.called(ACK)
    assert len(acknowledged) == 1
    assert (project / "src" / "calc.py").read_text(encoding="utf-8") == FIXED
    assert "1 passed" in model.turns[-1].last_text
    assert result["result"].startswith("Fixed")
    (escalation,) = escalations(db)
    assert (escalation["status"], escalation["response_content"]) == ("resolved", GUIDANCE)
    assert escalation["acknowledgement_note"] == "I will make add add."  # the agent's own
    assert [t["status"] for t in tasks(db)] == ["active"]


def _waits(turn: Turn) -> bool:
    return isinstance(turn.reply, ToolCall) and turn.reply.name == GET
