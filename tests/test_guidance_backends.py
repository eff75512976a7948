"""The same store on SQLite and on PostgreSQL gives the same guidance: the same top-k, ids
and scores, and below it the same word statistics and the same bm25 of every candidate.

Both stores are filled through the services, record by record, with the same clock; then
every query is asked of both. PostgreSQL's search is its own (a tsvector of FTS5's tokens,
bm25 in Python), so any difference in tokenizing, matching or weighing shows here. Each
test takes its PostgreSQL database (``pg_url``) from the session's own server.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from conftest import PROJECT
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.rules.bounds.token_scope import Scope
from mcp_server_escalation.rules.guidance import fts, ranking
from mcp_server_escalation.services import (
    copying,
    escalation_lists,
    escalation_raising,
    failures,
    guidance,
    tasks,
)
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import failures as failure_store
from mcp_server_escalation.store import guidance as guidance_store
from mcp_server_escalation.store import search_tokens
from mcp_server_escalation.store.sql import Conn

BIG = ThresholdOverrides(
    same_error_repeated=1000,
    total_verification_attempts=1000,
    no_file_changes_after_attempts=1000,
    max_minutes=1000_000,
)


class Clock:
    """A time the test sets: both stores see the same one at each step."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


# Words of every kind a failure text holds.
COMMON = ["error", "failed"]  # in every record
ACCENTED = [
    "café",
    "naïve",
    "Straße",
    "İstanbul",
    "ﬁle",
    "\uff34\uff59\uff50\uff45",
    "θάλασσα",
    "日本語",
    "Ǆemal",
    "x\u0301y",
]
IDENTIFIERS = ["next_url", "os.path.join", "foo.bar.baz", "user_id", "self._cache", "np.float64", "__init__"]
NUMBERS = ["E501", "404", "3.14", "0x1f", "v2", "deadbeef1"]
RARE = ["".join(random.Random(n).choices("bcdfghjklmnpqrstvwz", k=6)) for n in range(40)]  # noqa: S311
KINDS = ["KeyError", "ValueError", "TimeoutError", "AssertionError", None]
TOOLS = ["pytest", "ruff", "Bash", None]
ADVICE = ["pin the café version", "retry with backoff", "use next_url", None]


def _reports(rng: random.Random, count: int) -> list[FailureReport]:
    """``count`` reports over three tasks, new records and repeats mixed."""
    made: list[FailureReport] = []
    for _ in range(count):
        if made and rng.random() < 0.15:
            again = rng.choice(made)  # a repeat: same record, maybe new advice
            made.append(again.model_copy(update={"recommended_adjustment": rng.choice(ADVICE)}))
            continue
        words = [
            *rng.sample(RARE, rng.randint(1, 3)),
            *rng.sample(ACCENTED + IDENTIFIERS + NUMBERS, rng.randint(0, 3)),
            *COMMON,
        ]
        rng.shuffle(words)
        made.append(
            FailureReport(
                task_id=rng.choice(("a1", "a2", "b1")),
                message=" ".join(words) + ("" if rng.random() < 0.7 else " " + " ".join(words[:2])),
                error_type=rng.choice(KINDS),
                tool_name=rng.choice(TOOLS),
                severity=rng.choice(("low", "medium", "high", "critical")),
                recommended_adjustment=rng.choice(ADVICE),
                step=rng.choice(("main", "build")),
            )
        )
    return made


QUERIES = [
    "error failed",  # common words only: the least common stands in, unscored
    "café naïve",
    "CAFE NAIVE",  # the same tokens, by folding
    "Strasse straße",
    "istanbul İSTANBUL",
    "\ufb01le file \uff34\uff59\uff50\uff45 type",
    "θαλασσα 日本語",
    "ǆemal xy",
    "next_url",
    "os.path.join foo.bar.baz",
    "self._cache __init__ user_id",
    "np.float64 E501 404",
    "3.14 0x1f v2 deadbeef1",
    "KeyError pytest",
    "TimeoutError retry backoff",
    "Bash ruff AssertionError",
    *(" ".join(random.Random(n).sample(RARE, 2)) for n in range(6)),  # noqa: S311 (test data)
    *(" ".join(random.Random(n).sample(RARE, 4)) + " error" for n in range(4)),  # noqa: S311 (test data)
    "zzzz nothing holds this",
]


@asynccontextmanager
async def _stores(sqlite_path: str, pg_url: str, clock: Clock) -> AsyncIterator[tuple[Runtime, Runtime]]:
    async with AsyncExitStack() as stack:
        both = [
            await stack.enter_async_context(open_runtime(Settings(db_path=path, project_root=PROJECT), clock))
            for path in (sqlite_path, pg_url)
        ]
        yield both[0], both[1]


async def _fill(runtimes: tuple[Runtime, Runtime], clock: Clock, reports: list[FailureReport]) -> list[str]:
    for rt in runtimes:
        for task_id in ("a1", "a2"):
            await tasks.start_task(rt, title="t", task_id=task_id, thresholds=BIG)
        await tasks.start_task(rt, title="t", task_id="b1", project="/elsewhere", thresholds=BIG)
    ids: list[str] = []
    for n, report in enumerate(reports):
        clock.now += timedelta(hours=3 + n % 5)  # days apart now and then: recency counts
        got = [(await failures.record_failure(rt, report)).failure.failure_id for rt in runtimes]
        assert got[0] == got[1]
        ids.append(got[0])
    return ids


async def _revise(runtimes: tuple[Runtime, Runtime], ids: list[str]) -> None:
    """Some records resolved, superseded, or judged: they drop out or sink alike."""
    for rt in runtimes:
        await guidance.update_failure(rt, failure_id=ids[3], status="resolved")
        await guidance.update_failure(rt, failure_id=ids[5], superseded_by=ids[6])
        for _ in range(3):
            await guidance.update_failure(rt, failure_id=ids[8], outcome="harmful")
        await guidance.update_failure(rt, failure_id=ids[9], outcome="helpful")


def _top(result: Any) -> list[tuple[str, float, bool]]:
    return [(item.failure_id, item.score, item.exact_match) for item in result.items]


def _search_details(conn: Conn, text: str) -> list[Any]:
    """Below the top-k: the word statistics and the bm25 of every lexical candidate."""
    tokens = ranking.query_tokens(text, search_tokens.tokens)
    if not tokens:
        return []
    stats = guidance_store.word_stats(conn, tokens, ranking.DF_SAMPLE)
    found: list[Any] = [
        stats.records,
        stats.counts,
        stats.last,
        [set((i or "").split(",")) for i in stats.ids],
    ]
    for scope in (guidance_store.Scope("task_id", "a1"), guidance_store.Scope("project", PROJECT)):
        for all_of in (False, True):
            match = ranking.Match(tuple(tokens), all_of=all_of)
            for scored in (True, False):
                found.append(
                    guidance_store.lexical(conn, scope, match, newest=400, exact=None, scored=scored)
                )
    return found


async def test_the_same_store_gives_the_same_guidance_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    clock = Clock()
    reports = _reports(random.Random(20), 420)  # noqa: S311 (test data)
    async with _stores(str(tmp_path / "same.db"), pg_url, clock) as runtimes:
        ids = await _fill(runtimes, clock, reports)
        await _revise(runtimes, ids)
        clock.now += timedelta(days=2)
        asked = 0
        for query in [*QUERIES, *(r.message for r in reports[:12:3])]:  # the last: exact matches
            for task_id, scope in (("a1", "task"), ("a2", "project"), ("b1", "project")):
                for k in (1, 5, 20):
                    got = [
                        _top(await guidance.get_guidance(rt, task_id=task_id, query=query, k=k, scope=scope))
                        for rt in runtimes
                    ]
                    assert got[0] == got[1], (query, task_id, scope, k)
                    asked += bool(got[0])
            details = [await rt.db.read(functools.partial(_search_details, text=query)) for rt in runtimes]
            assert details[0] == details[1], query
        for step in ("main", "build"):  # no query: the step's latest failure is the reference
            got = [_top(await guidance.get_guidance(rt, task_id="a1", step=step, k=10)) for rt in runtimes]
            assert got[0] == got[1]
    assert asked > 100  # most questions had answers to compare


async def test_the_attempted_action_is_not_searched_on_either_backend(tmp_path: Path, pg_url: str) -> None:
    clock = Clock()
    async with _stores(str(tmp_path / "action.db"), pg_url, clock) as runtimes:
        for rt in runtimes:
            await tasks.start_task(rt, title="t", task_id="s7", thresholds=BIG)
            for attempt in ("rewrote the xylophone adapter", "pinned the quokka fixture"):
                report = FailureReport(task_id="s7", message="zeppelin overflow", attempted_action=attempt)
                await failures.record_failure(rt, report)
        for rt in runtimes:
            assert len((await guidance.get_guidance(rt, task_id="s7", query="zeppelin")).items) == 1
            assert (await guidance.get_guidance(rt, task_id="s7", query="quokka xylophone")).items == []


def test_a_token_too_long_for_a_lexeme_is_searched_by_its_hash() -> None:
    long = "a" * 3000
    assert fts.lexeme(long) == "#" + hashlib.sha256(long.encode()).hexdigest()
    assert fts.lexeme("short") == "short"
    assert search_tokens.record_terms([f"x {long} {long}", None, None, None, None]).counts == {
        "x": [1, 0, 0, 0, 0],
        fts.lexeme(long): [2, 0, 0, 0, 0],
    }


async def test_a_message_with_a_very_long_token_is_found_by_it(tmp_path: Path, pg_url: str) -> None:
    blob = "Q" * 5000
    clock = Clock()
    async with _stores(str(tmp_path / "long.db"), pg_url, clock) as runtimes:
        found = []
        for rt in runtimes:
            await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
            await failures.record_failure(rt, FailureReport(task_id="s1", message=f"payload {blob} rejected"))
            await failures.record_failure(rt, FailureReport(task_id="s1", message="payload rejected again"))
            found.append(_top(await guidance.get_guidance(rt, task_id="s1", query=f"{blob} bad")))
    assert found[0] == found[1]
    assert found[0][0][0] == "F-1"


def _search_state(conn: Conn) -> list[Any]:
    return [
        conn.execute("SELECT records, tokens FROM failure_search_totals").fetchall(),
        conn.execute("SELECT seq, search, search_terms, search_size FROM failures ORDER BY seq").fetchall(),
    ]


async def test_the_search_columns_kept_record_by_record_are_what_indexing_anew_finds(pg_url: str) -> None:
    clock = Clock()
    async with open_runtime(Settings(db_path=pg_url, project_root=PROJECT), clock) as rt:
        for task_id in ("a1", "a2", "b1"):
            await tasks.start_task(rt, title="t", task_id=task_id, thresholds=BIG)
        for report in _reports(random.Random(5), 120):  # noqa: S311 (test data)
            await failures.record_failure(rt, report)  # repeats change the advice now and then
        kept = await rt.db.read(_search_state)
        asked = [await guidance.get_guidance(rt, task_id="a1", query=q, scope="project") for q in QUERIES]

        def wipe(conn: Conn) -> None:  # as a copy of the store's rows leaves them
            conn.execute("UPDATE failures SET search = '', search_terms = '{}', search_size = 0")
            conn.execute("UPDATE failure_search_totals SET records = 0, tokens = 0")

        await rt.db.write(wipe)
        assert (await guidance.get_guidance(rt, task_id="a1", query="error", scope="project")).items == []
        await rt.db.write(failure_store.reindex_search)
        again = [await guidance.get_guidance(rt, task_id="a1", query=q, scope="project") for q in QUERIES]
        assert await rt.db.read(_search_state) == kept
    assert [_top(r) for r in again] == [_top(r) for r in asked]


async def test_a_sqlite_store_copied_into_postgresql_gives_the_same_guidance(
    tmp_path: Path, pg_url: str
) -> None:
    source = str(tmp_path / "source.db")
    clock = Clock()
    async with open_runtime(Settings(db_path=source, project_root=PROJECT), clock) as rt:
        for task_id in ("a1", "a2", "b1"):
            await tasks.start_task(rt, title="t", task_id=task_id, thresholds=BIG)
        for report in _reports(random.Random(9), 150):  # noqa: S311 (test data)
            clock.now += timedelta(hours=5)
            await failures.record_failure(rt, report)
    await copying.copy_store(source, pg_url)
    async with _stores(source, pg_url, clock) as runtimes:
        for query in QUERIES:
            got = [
                _top(await guidance.get_guidance(rt, task_id="a1", query=query, scope="project"))
                for rt in runtimes
            ]
            assert got[0] == got[1], query
        assert await runtimes[1].db.read(_search_state) != [[(0, 0)], []]


async def test_a_store_whose_ids_skip_gives_the_same_guidance_copied_to_the_other_backend(
    tmp_path: Path, pg_url: str
) -> None:
    # PostgreSQL's ids skip where an insert rolled back; a copy keeps them.
    clock = Clock()
    target = str(tmp_path / "copied.db")
    reports = _reports(random.Random(11), 160)  # noqa: S311 (test data)
    async with open_runtime(Settings(db_path=pg_url, project_root=PROJECT), clock) as rt:
        for task_id in ("a1", "a2", "b1"):
            await tasks.start_task(rt, title="t", task_id=task_id, thresholds=BIG)
        for n, report in enumerate(reports):
            if n == 60:
                await rt.db.write(
                    lambda conn: conn.execute("SELECT setval(pg_get_serial_sequence('failures', 'seq'), 500)")
                )
            clock.now += timedelta(hours=5)
            await failures.record_failure(rt, report)
    await copying.copy_store(pg_url, target)
    async with _stores(target, pg_url, clock) as runtimes:
        for query in QUERIES:
            details = [await rt.db.read(functools.partial(_search_details, text=query)) for rt in runtimes]
            assert details[0] == details[1], query
            got = [
                _top(await guidance.get_guidance(rt, task_id="a1", query=query, scope="project"))
                for rt in runtimes
            ]
            assert got[0] == got[1], query


async def test_a_scoped_tokens_lists_are_the_same_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    """What a scoped token reads across tasks (escalations, a project's guidance) keeps its
    scope's tasks on PostgreSQL as on SQLite."""
    within = Scope(task_prefixes=("a",))
    report = {"step": "main", "message": "ModuleNotFoundError: No module named 'quokka'"}
    listed, found = [], []
    async with _stores(str(tmp_path / "scoped.db"), pg_url, Clock()) as runtimes:
        for rt in runtimes:
            for task_id in ("a1", "b1", "a2"):  # one project: b1 is outside the scope by its id
                await tasks.start_task(rt, title="t", task_id=task_id, thresholds=BIG)
                await failures.record_failure(rt, FailureReport(task_id=task_id, **report))
                await escalation_raising.raise_escalation(rt, task_id=task_id, reason="Which module?")
            page = await escalation_lists.list_escalations(rt, status="all", limit=1, within=within)
            listed.append(([s.task_id for s in page.escalations], page.total))
            answer = await guidance.get_guidance(rt, task_id="a1", scope="project", within=within)
            found.append(sorted(i.task_id for i in answer.items))
    assert listed == [(["a2"], 2)] * 2
    assert found == [["a1", "a2"]] * 2
