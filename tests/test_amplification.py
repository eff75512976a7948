"""Amplification: what one call stores, returns and sends stays bounded, however large the
calls before it were.

Each new escalation shows the task's latest actions; they are summaries, bounded per action
and in all, so twenty calls with arguments at their limits do not make the escalation (and
every result and notification that carries it) grow with them. A notification stays under
what chat webhooks accept and names the command that shows the rest. Lists of long strings
have limits per call, on their count and on their characters in all, named in the error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from mcp_server_escalation.models.limits import (
    LIST_TEXT_MAX,
    OPTION_MAX,
    OPTIONS_MAX,
    OPTIONS_TOTAL_MAX,
    RESULT_MAX_BYTES,
)
from mcp_server_escalation.rules.bounds.evidence import (
    ACTION_MAX_BYTES,
    RECENT_ACTIONS_MAX_BYTES,
    action_summary,
    json_bytes,
    recent_summaries,
)
from mcp_server_escalation.rules.bounds.results import fit
from mcp_server_escalation.rules.operators.announce import NOTIFY_PAYLOAD_MAX_BYTES
from mcp_server_escalation.settings import NotifyConfig
from operator_support import eventually

pytestmark = pytest.mark.both_backends

# A 4-byte character (U+1F600): a text at its limit in characters costs four times the bytes.
WIDE = "\U0001f600"
NEVER = 1_000_000
QUIET = {
    "files_modified_exceeds": NEVER,
    "total_verification_attempts": NEVER,
    "no_file_changes_after_attempts": NEVER,
    "no_test_improvement_after": NEVER,
}


def size(result: dict[str, Any]) -> int:
    """Bytes of the result as the model reads it (compact JSON, as the tools send it)."""
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())


def paths_at_the_limit(tag: str) -> list[str]:
    """500 paths (the most a list takes) whose characters add up to just under the limit."""
    each = LIST_TEXT_MAX // 500
    return [f"src/{tag}/{n:03d}/".ljust(each - 1, "p") + WIDE for n in range(500)]


async def _progress_at_limits(agent: Any, task_id: str, reports: int = 20) -> None:
    for n in range(reports):
        await agent.call(
            "report_progress",
            task_id=task_id,
            files_modified=paths_at_the_limit(str(n)),
            note=WIDE * 65536,
            step="s" * 255 + WIDE,
            outcome="success",
        )


async def test_an_escalation_after_twenty_progress_reports_at_their_limits_stays_small(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="big", task_id="big", scope=["src/**"], thresholds=QUIET)
        await _progress_at_limits(agent, "big")
        refused = await agent.call("check_edit", task_id="big", paths=["docs/readme.md"])
        read = await agent.call("get_escalation", escalation_id=refused["holding"]["escalation_id"])

    escalation = refused["escalation"]
    assert escalation["type"] == "scope_deviation"
    assert size(refused) < RESULT_MAX_BYTES, f"check_edit: {size(refused)} bytes"
    assert size(read) < RESULT_MAX_BYTES, f"get_escalation: {size(read)} bytes"
    actions = escalation["context"]["recent_actions"]
    # The latest actions, newest last, each a summary: its first paths and how many more.
    assert actions[-1]["kind"] == "check_edit"
    progress = [a for a in actions if a["kind"] == "report_progress"]
    assert progress, actions
    *first, more = progress[-1]["detail"]["files"]
    assert first[0].startswith("src/19/000/")
    assert more == f"(+{500 - len(first)} more)"


async def test_a_long_result_travels_once_its_text_a_short_pointer_to_it(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="big", task_id="big", scope=["src/**"], thresholds=QUIET)
        await _progress_at_limits(agent, "big", reports=3)
        long = await agent.client.call_tool("get_task", {"task_id": "big"})
        short = await agent.client.call_tool("report_progress", {"task_id": "big", "note": "small"})

    assert long.structured_content is not None
    whole = json.dumps(long.structured_content, separators=(",", ":"))
    assert len(whole) > 4096, "the task's result is not long: it proves nothing"
    [text] = long.content
    assert text.text == (  # type: ignore[union-attr]
        f"{long.structured_content['message']} The whole result is in this call's structured content."
    )
    wire = len(long.model_dump_json(by_alias=True).encode())
    assert wire < len(whole.encode()) + 512, f"{wire} bytes on the wire for a {len(whole)}-byte result"
    # A short result keeps its JSON as its text, for a client that gives the model the text alone.
    assert short.structured_content is not None
    assert json.loads(short.content[0].text) == short.structured_content  # type: ignore[union-attr]


async def test_one_actions_summary_is_bounded_whatever_its_detail_holds(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="one", task_id="one", scope=["src/**"], thresholds=QUIET)
        await _progress_at_limits(agent, "one", reports=1)
        refused = await agent.call("check_edit", task_id="one", paths=["docs/readme.md"])
    actions = refused["escalation"]["context"]["recent_actions"]
    [progress] = [a for a in actions if a["kind"] == "report_progress"]
    assert size(progress) < 1024, progress


async def test_raise_escalation_refuses_more_options_than_the_limit_and_names_it(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="ask", task_id="ask")
        ask = {"task_id": "ask", "reason": "Which?"}
        many = await agent.error("raise_escalation", **ask, options=["a"] * (OPTIONS_MAX + 1))
        long = await agent.error("raise_escalation", **ask, options=["a" * (OPTION_MAX + 1)])
        filled = OPTIONS_TOTAL_MAX // OPTION_MAX
        wide = await agent.error("raise_escalation", **ask, options=[WIDE * OPTION_MAX] * (filled + 1))
        fits = await agent.call("raise_escalation", **ask, options=[WIDE * OPTION_MAX] * filled)
    for error, limit in ((many, f"{OPTIONS_MAX} items"), (long, f"{OPTION_MAX} characters")):
        assert error.startswith("Error executing tool raise_escalation")
        assert "options" in error
        assert limit in error
    assert "options" in wide
    assert f"{OPTIONS_TOTAL_MAX:,} characters" in wide
    assert len(fits["escalation"]["options"]) == OPTIONS_TOTAL_MAX // OPTION_MAX


async def test_path_lists_are_limited_in_characters_in_all_and_the_error_names_it(db_path: str) -> None:
    over = [*paths_at_the_limit("x")[:-1], "src/" + "q" * 4000]
    async with connect(db_path) as agent:
        await agent.call("start_task", title="paths", task_id="paths")
        progress = await agent.error("report_progress", task_id="paths", files_modified=over)
        edit = await agent.error("check_edit", task_id="paths", paths=over)
        start = await agent.error("start_task", title="scope", task_id="scope", scope=over)
    for error, field in ((progress, "files_modified"), (edit, "paths"), (start, "scope")):
        assert field in error, error
        assert f"{LIST_TEXT_MAX:,} characters" in error, error


async def test_a_notification_stays_under_what_chat_webhooks_accept_and_names_the_rest(
    db_path: str, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    notify = NotifyConfig(command=f'cat > "{inbox}/$ESCALATION_ID.json"')
    async with connect(db_path, notify=notify) as agent:
        await agent.call("start_task", title=WIDE * 1024, task_id="loud", scope=["src/**"], thresholds=QUIET)
        await _progress_at_limits(agent, "loud", reports=3)
        asked = await agent.call(
            "raise_escalation",
            task_id="loud",
            reason=WIDE * 65536,
            question=WIDE * 65536,
            options=[WIDE * OPTION_MAX] * (OPTIONS_TOTAL_MAX // OPTION_MAX),
        )
        escalation_id = asked["escalation"]["escalation_id"]
        received = inbox / f"{escalation_id}.json"
        await eventually(lambda: received.exists() and received.stat().st_size > 0, 60, "the command ran")
        await eventually(lambda: _complete_json(received), 60, "the command wrote the whole payload")
    sent = received.read_bytes()
    payload = json.loads(sent)
    assert len(sent) <= NOTIFY_PAYLOAD_MAX_BYTES, f"{len(sent)} bytes"
    assert payload["escalation_id"] == escalation_id
    assert payload["shortened"] is True
    assert f"escalations show {escalation_id}" in payload["more"]
    assert payload["text"].startswith("[normal] Escalation")


def _complete_json(path: Path) -> bool:
    try:
        json.loads(path.read_bytes())
    except ValueError:
        return False
    return True


def test_an_actions_summary_fits_its_bound_whatever_shape_its_detail_has() -> None:
    deep: Any = WIDE * 10_000
    for _ in range(20):
        deep = {"inner": deep, "list": [WIDE * 100] * 100, **{f"text_{n}": WIDE * 5000 for n in range(10)}}
    action = {"at": "2026-11-21T10:00:00.000Z", "agent_id": WIDE * 256, "kind": "check_edit", "detail": deep}
    summary = action_summary(action)
    assert json_bytes(summary) <= ACTION_MAX_BYTES
    assert summary["kind"] == "check_edit"
    shown = recent_summaries([action] * 10)
    assert sum(json_bytes(a) for a in shown) <= RECENT_ACTIONS_MAX_BYTES
    assert shown  # the newest is always shown


async def test_pointers_and_blocker_details_are_limited_in_all_and_named(db_path: str) -> None:
    refs = [{"kind": f"key_{n}", "ref": "p" * 500} for n in range(20) for _ in range(2)]  # 20,000 characters
    async with connect(db_path) as agent:
        await agent.call("start_task", title="refs", task_id="refs")
        pointers = await agent.error("record_failure", task_id="refs", message="boom", context_refs=refs)
        details = await agent.error(
            "record_failure", task_id="refs", message="boom", details={"dependency": "d" * 513}
        )
    assert "context_refs" in pointers
    assert "16,384 characters" in pointers
    assert "details.dependency" in details
    assert "512" in details


def test_a_result_over_the_bound_shows_its_longest_texts_clipped_and_its_short_ones_whole() -> None:
    result = {
        "task_id": "t" * 128,
        "specification": WIDE * 65536,
        "response": {"content": WIDE * 65536, "responder": "alice"},
        "findings": [{"finding_id": n, "stage": f"stage-{n}", "response": WIDE * 4096} for n in range(300)],
    }
    fitted = fit(result, RESULT_MAX_BYTES)
    assert size(fitted) <= RESULT_MAX_BYTES
    assert (fitted["task_id"], fitted["response"]["responder"]) == ("t" * 128, "alice")
    assert "characters omitted" in fitted["specification"]
    assert fitted["findings"][0]["stage"] == "stage-0"
    small = {"task_id": "t", "note": WIDE * 100}
    assert fit(small, RESULT_MAX_BYTES) is small
