"""Failure guidance (docs/guidance.md): records, top-k ranking, revision, pointer-only refs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Agent, FakeClock, connect
from mcp_server_escalation.clock import parse_iso
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.rules.guidance import ranking
from mcp_server_escalation.services import failures, guidance, tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings

pytestmark = pytest.mark.both_backends

BIG = {"same_error_repeated": 1000}


async def _start(agent: Agent, task_id: str = "g1", project: str | None = None) -> None:
    extra = {"project": project} if project else {}
    await agent.call("start_task", title="t", task_id=task_id, thresholds=BIG, **extra)


async def _fail(agent: Agent, message: str, task_id: str = "g1", **extra: Any) -> dict[str, Any]:
    return await agent.call("record_failure", task_id=task_id, message=message, **extra)


# --- Guidance: records, ranking, revision -----------------------------------------------

SIGNALS = [
    "runtime_error",
    "tool_error",
    "test_failure",
    "build_error",
    "lint_error",
    "timeout",
    "schema_violation",
    "retrieval_failure",
    "loop_detected",
    "human_correction",
    "budget_pressure",
    "network_transient",
]


@pytest.mark.parametrize("signal_type", SIGNALS)
async def test_each_signal_type_writes_a_record_with_pointer_refs(db_path: str, signal_type: str) -> None:
    refs = {"artifact_ids": ["a-1", "a-2"], "query_id": ["q-7"], "span": ["src/a.py:10-20"]}
    async with connect(db_path) as agent:
        await _start(agent)
        result = await _fail(
            agent,
            f"{signal_type} happened",
            signal_type=signal_type,
            context_refs=[{"kind": kind, "ref": ref} for kind, items in refs.items() for ref in items],
            attempted_action="ran step",
            phase="execute",
            recommended_adjustment="cap output; paginate",
        )
        view = await agent.client.read_resource(f"failure://{result['failure']['failure_id']}")
    record = __import__("json").loads(view.contents[0].text)["failure"]  # type: ignore[union-attr]
    assert record["signal_type"] == signal_type
    assert record["context_refs"] == refs
    assert record["phase"] == "execute"
    assert record["status"] == "active"
    assert record["fingerprint"].startswith("fp-")
    for field in (
        "failure_id",
        "task_id",
        "step",
        "severity",
        "attempted_action",
        "observed_outcome",
        "recommended_adjustment",
        "occurrence_count",
        "last_seen_at",
        "helpful_count",
        "harmful_count",
        "created_at",
        "superseded_by",
    ):
        assert field in record


async def test_identical_failures_share_a_fingerprint_and_count_up(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        first = await _fail(agent, "Timeout after 30s calling tool X", file="a.py", line=3)
        second = await _fail(agent, "Timeout after 45s calling tool X", file="a.py", line=9)
    assert first["failure"]["fingerprint"] == second["failure"]["fingerprint"]
    assert first["failure"]["failure_id"] == second["failure"]["failure_id"]
    assert second["failure"]["occurrence_count"] == 2


async def _record(agent: Agent, failure_id: str) -> dict[str, Any]:
    view = await agent.client.read_resource(f"failure://{failure_id}")
    return json.loads(view.contents[0].text)["failure"]  # type: ignore[union-attr,no-any-return]


async def test_a_repeat_counts_on_the_record_and_keeps_what_it_learned(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        first = await _fail(
            agent,
            "Timeout after 30s calling tool X",
            severity="high",
            phase="plan",
            recommended_adjustment="raise the timeout",
            details={"endpoint": "https://api.example.com"},
            context_refs=[{"kind": "query_id", "ref": "q-1"}],
        )
        failure_id = first["failure"]["failure_id"]
        # Later repeats: other wording, lower severity, no advice or facts of their own.
        plain = await _fail(
            agent, "Timeout after 45s calling tool X", severity="low", attempted_action="retry"
        )
        kept = await _record(agent, failure_id)
        await agent.call("update_failure", failure_id=failure_id, status="resolved", note="fixed")
        again = await _fail(
            agent, "Timeout after 60s calling tool X", phase="verify", recommended_adjustment="page it"
        )
        reactivated = await _record(agent, failure_id)
        other = (await _fail(agent, "a different failure altogether"))["failure"]["failure_id"]
        await agent.call("update_failure", failure_id=failure_id, superseded_by=other)
        await _fail(agent, "Timeout after 90s calling tool X")
        superseded = await _record(agent, failure_id)

    assert plain["failure"]["failure_id"] == failure_id
    assert (plain["failure"]["occurrence_count"], plain["failure"]["severity"]) == (2, "high")
    assert kept["message"] == "Timeout after 30s calling tool X"  # the first wording stays
    assert (kept["phase"], kept["recommended_adjustment"]) == ("plan", "raise the timeout")
    assert kept["attempted_action"] == "retry"
    assert kept["details"]["endpoint"] == "https://api.example.com"
    assert kept["context_refs"] == {"query_id": ["q-1"]}
    assert kept["last_seen_at"] >= kept["created_at"]
    # A resolved record that happens again is active again, with the newer advice.
    assert again["failure"]["status"] == "active"
    assert again["failure"]["occurrence_count"] == 3
    assert reactivated["status"] == "active"
    assert (reactivated["phase"], reactivated["recommended_adjustment"]) == ("verify", "page it")
    assert reactivated["severity"] == "high"
    # A superseded one stays superseded: its replacement holds the advice.
    assert superseded["status"] == "superseded"
    assert superseded["occurrence_count"] == 4


async def test_guidance_includes_only_the_top_k(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        for n in range(12):
            await _fail(agent, f"distinct problem number {'abcdefghijkl'[n]} in module")
        got = await agent.call("get_guidance", task_id="g1", k=5)
        few = await agent.call("get_guidance", task_id="g1", k=1)
    assert len(got["items"]) == 5
    assert len(few["items"]) == 1
    assert got["rendered"].count("\n") == 4


async def test_resolved_and_superseded_records_are_left_out(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        a = (await _fail(agent, "alpha failure in parser"))["failure"]["failure_id"]
        b = (await _fail(agent, "beta failure in parser"))["failure"]["failure_id"]
        c = (await _fail(agent, "gamma failure in parser"))["failure"]["failure_id"]
        await agent.call("update_failure", failure_id=a, status="resolved", note="fixed")
        await agent.call("update_failure", failure_id=b, superseded_by=c)
        got = await agent.call("get_guidance", task_id="g1", query="failure in parser")
    assert [i["failure_id"] for i in got["items"]] == [c]


async def test_guidance_order_is_deterministic(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        for word in ("disk", "network", "parser", "cache", "index"):
            await _fail(agent, f"{word} error while building")
        runs = [
            await agent.call("get_guidance", task_id="g1", query="error while building") for _ in range(3)
        ]
    assert runs[0] == runs[1] == runs[2]


async def test_escalation_at_the_repeat_threshold(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="g2")
        results = [await _fail(agent, "invariant broken: missing pointer", task_id="g2") for _ in range(3)]
        system = await agent.call(
            "raise_escalation",
            task_id="g2",
            kind="system_error",
            reason="unrecoverable: critical pointers missing",
        )
    assert [r["escalation"] is not None for r in results] == [False, False, True]
    assert results[2]["escalation"]["type"] == "repeated_error"
    assert system["escalation"]["type"] == "system_error"


# --- ranking with hand-computed orders --------------------------------------------------------

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _candidate(seq: int, **extra: Any) -> ranking.Candidate:
    base: dict[str, Any] = {
        "severity": "medium",
        "last_seen_at": "2026-11-21T10:00:00.000Z",
        "occurrence_count": 1,
        "helpful_count": 0,
        "harmful_count": 0,
        "exact": False,
        "bm25": None,
    }
    base.update(extra)
    return ranking.Candidate(seq=seq, **base)


def _order(candidates: list[ranking.Candidate], k: int = 10) -> list[int]:
    return [c.seq for c, _ in ranking.rank(candidates, now=NOW, k=k, parse=parse_iso)]


def test_exact_match_ranks_first_whatever_else() -> None:
    strong = _candidate(1, severity="critical", occurrence_count=40, bm25=-9.0, helpful_count=5)
    exact = _candidate(2, severity="low", exact=True, last_seen_at=(NOW - timedelta(days=300)).isoformat())
    assert _order([strong, exact]) == [2, 1]


def test_severity_breaks_an_otherwise_equal_tie() -> None:
    # weights: severity 2.0 -> low 0.5, medium 1.0, high 1.5, critical 2.0 points
    cands = [
        _candidate(1, severity="low"),
        _candidate(2, severity="critical"),
        _candidate(3, severity="high"),
        _candidate(4, severity="medium"),
    ]
    assert _order(cands) == [2, 3, 4, 1]


def test_recency_counts_in_whole_days() -> None:
    today = _candidate(1, last_seen_at="2026-11-21T00:00:01.000Z")
    hours_ago = _candidate(2, last_seen_at="2026-11-20T13:00:00.000Z")  # 23 h: still day 0
    week_ago = _candidate(3, last_seen_at="2026-11-14T11:00:00.000Z")
    scores = {c.seq: s for c, s in ranking.rank([today, hours_ago, week_ago], now=NOW, k=3, parse=parse_iso)}
    assert scores[1] == scores[2]
    assert scores[1] - scores[3] == pytest.approx(1.5 * (1 - 1 / 8), abs=1e-4)
    # equal scores: the more recent first
    assert _order([hours_ago, today, week_ago]) == [1, 2, 3]


def test_smoothed_helpfulness_lifts_and_sinks() -> None:
    helped = _candidate(1, helpful_count=3)  # (3+1)/(3+2) = 0.8
    neutral = _candidate(2)  # 0.5
    hurt = _candidate(3, harmful_count=2)  # 1/4 = 0.25
    gone = _candidate(4, harmful_count=3)  # harmful >= helpful + 3: dropped
    assert _order([gone, hurt, neutral, helped]) == [1, 2, 3]


def test_more_occurrences_rank_higher() -> None:
    assert _order([_candidate(1, occurrence_count=1), _candidate(2, occurrence_count=30)]) == [2, 1]


def test_lexical_relevance_is_relative_to_the_best_match() -> None:
    best = _candidate(1, bm25=-8.0)
    half = _candidate(2, bm25=-4.0)
    none = _candidate(3)
    ranked = {c.seq: s for c, s in ranking.rank([none, half, best], now=NOW, k=3, parse=parse_iso)}
    assert ranked[1] - ranked[2] == pytest.approx(4.0 * 0.5, abs=1e-4)
    assert ranked[2] - ranked[3] == pytest.approx(4.0 * 0.5, abs=1e-4)


def test_ties_break_by_recency_then_oldest_record() -> None:
    same = "2026-11-21T10:00:00.000Z"
    assert _order([_candidate(9, last_seen_at=same), _candidate(3, last_seen_at=same)]) == [3, 9]


# --- through the tool: exactness, scope, query safety -----------------------------------------


async def test_without_a_query_the_steps_latest_failure_is_the_reference(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        await _start(agent)
        await _fail(
            agent,
            "ImportError: cannot import name 'x' from 'pkg'",
            step="build",
            recommended_adjustment="pin pkg<2",
        )
        clock.advance(hours=1)
        await _fail(agent, "AssertionError: expected 2 got 3", step="test")
        got = await agent.call("get_guidance", task_id="g1", step="build")
    first = got["items"][0]
    assert first["exact_match"] is True
    assert first["recommended_adjustment"] == "pin pkg<2"
    assert "ImportError" in got["query"]


async def test_project_scope_sees_other_tasks_of_the_project_only(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent, "p-a", project="/work/project")
        await _start(agent, "p-b", project="/work/project")
        await _start(agent, "other", project="/work/elsewhere")
        await _fail(agent, "schema validation failed for field user", task_id="p-b")
        await _fail(agent, "schema validation failed for field user", task_id="other")
        task_scope = await agent.call("get_guidance", task_id="p-a", query="schema validation")
        project = await agent.call("get_guidance", task_id="p-a", query="schema validation", scope="project")
    assert task_scope["items"] == []
    assert [i["task_id"] for i in project["items"]] == ["p-b"]


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "a OR",
        "NEAR(x y)",
        "col:value",
        "*",
        "^start",
        "(",
        "AND AND",
        "😀 ünïcode",
        "",
        "   ",
        "-x",
        "a\"b'c",
        "NOT x",
    ],
)
async def test_no_query_can_raise_an_fts_syntax_error(db_path: str, query: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        await _fail(agent, "value error near col in unicode 😀 ünïcode text")
        got = await agent.call("get_guidance", task_id="g1", query=query)
    assert len(got["items"]) <= 5


async def test_clearly_harmful_guidance_drops_out_and_every_change_is_audited(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        fid = (await _fail(agent, "flaky network call to registry"))["failure"]["failure_id"]
        for _ in range(3):
            view = await agent.call("update_failure", failure_id=fid, outcome="harmful", note="made it worse")
        got = await agent.call("get_guidance", task_id="g1", query="network registry")
        await agent.call("update_failure", failure_id=fid, outcome="helpful")
    assert got["items"] == []
    assert view["failure"]["harmful_count"] == 3
    assert [r["changes"]["harmful_count"] for r in view["revisions"]] == [[0, 1], [1, 2], [2, 3]]
    assert all(r["note"] == "made it worse" for r in view["revisions"])


async def test_revision_errors_name_the_field(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        fid = (await _fail(agent, "boom"))["failure"]["failure_id"]
        unknown = await agent.error("update_failure", failure_id="F-999", status="resolved")
        malformed = await agent.error("update_failure", failure_id="nope", status="resolved")
        itself = await agent.error("update_failure", failure_id=fid, superseded_by=fid)
        missing = await agent.error("update_failure", failure_id=fid, status="superseded")
        nothing = await agent.error("update_failure", failure_id=fid)
    assert "failure_id" in unknown
    assert "F-999" in unknown
    assert "failure_id" in malformed
    assert "superseded_by" in itself
    assert "superseded_by" in missing
    assert "status" in nothing


@pytest.mark.parametrize(
    "refs",
    [
        [{"kind": "artifact", "ref": "line one\nline two"}],
        [{"kind": "blob", "ref": "x" * 600}],
        [{"kind": "Bad-Key", "ref": "x"}],
        [{"kind": "nested", "ref": {"a": 1}}],
        [{"kind": "many", "ref": "a"}] * 101,
        [{"kind": "extra", "ref": "a", "content": "the whole log"}],
        {"artifact": "a-1"},  # an object of any keys: the shape is a list of pointers
    ],
)
async def test_context_refs_must_be_pointers(db_path: str, refs: Any) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        text = await agent.error("record_failure", task_id="g1", message="m", context_refs=refs)
        after = await agent.call("get_task", task_id="g1")
    assert "context_refs" in text
    assert after["failure_records"] == 0


async def test_feedback_carries_the_guidance_section(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        failed = await _fail(
            agent,
            "TypeError: x is undefined",
            step="gen",
            recommended_adjustment="initialise x before the loop",
        )
        feedback = await agent.call("get_feedback", task_id="g1", step="gen")
    assert "# GUIDANCE FROM PAST FAILURES" in feedback["rendered"]
    assert "initialise x before the loop" in feedback["rendered"]
    assert feedback["guidance"] == [failed["failure"]["failure_id"]]


# --- properties ----------------------------------------------------------------------------

failure_text = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")),
    min_size=1,
    max_size=60,
).filter(lambda s: s.strip() != "")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=st.lists(failure_text, min_size=0, max_size=12),
    query=st.one_of(st.none(), st.text(max_size=80)),
    k=st.integers(min_value=1, max_value=20),
    scope=st.sampled_from(["task", "project"]),
)
def test_guidance_never_errors_is_bounded_and_is_deterministic(
    messages: list[str], query: str | None, k: int, scope: str
) -> None:
    async def run() -> None:
        async with open_runtime(Settings(db_path=":memory:", project_root="/p")) as rt:
            await tasks.start_task(rt, title="t", task_id="h1")
            for message in messages:
                await failures.record_failure(rt, FailureReport(task_id="h1", message=message))
            first = await guidance.get_guidance(rt, task_id="h1", query=query, k=k, scope=scope)
            second = await guidance.get_guidance(rt, task_id="h1", query=query, k=k, scope=scope)
        assert len(first.items) <= k
        assert first == second
        assert len(first.items) <= len(set(messages)) or not messages

    anyio.run(run)


_CANDIDATES = st.builds(
    ranking.Candidate,
    seq=st.integers(1, 10_000),
    severity=st.sampled_from(["low", "medium", "high", "critical"]),
    last_seen_at=st.datetimes(
        min_value=datetime(2025, 1, 1),  # naive bounds; the values are UTC
        max_value=datetime(2026, 11, 21, 12),
        timezones=st.just(UTC),
    ).map(lambda moment: moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")),
    occurrence_count=st.integers(1, 500),
    helpful_count=st.integers(0, 8),
    harmful_count=st.integers(0, 8),
    exact=st.booleans(),
    bm25=st.none() | st.floats(-30.0, -1e-6),
)


@given(st.lists(_CANDIDATES, max_size=40, unique_by=lambda c: c.seq), st.integers(1, 20))
@settings(max_examples=300, deadline=None)
def test_rank_orders_by_the_documented_score(candidates: list[ranking.Candidate], k: int) -> None:
    kept = [c for c in candidates if not ranking.clearly_harmful(c.helpful_count, c.harmful_count)]
    best = max((-c.bm25 for c in kept if c.bm25 is not None), default=0.0)

    def documented(c: ranking.Candidate) -> tuple[bool, float, float, int]:
        seen = parse_iso(c.last_seen_at)
        s = ranking.score(c, now=NOW, best_relevance=best, last_seen=seen)
        return (not c.exact, -s, -seen.timestamp(), c.seq)

    expected = sorted(kept, key=documented)[:k]
    got = ranking.rank(candidates, now=NOW, k=k, parse=parse_iso)
    assert [c for c, _ in got] == expected
    assert [s for _, s in got] == [-documented(c)[1] for c in expected]
