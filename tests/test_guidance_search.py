"""Which records guidance considers: exact matches by index, rare words, migration 6.

Everything runs on a real store file; the word rules are also checked as pure functions.
"""

from __future__ import annotations

import functools
import random
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import PROJECT, migrate_by_hand
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.rules.guidance import ranking
from mcp_server_escalation.rules.reading.fingerprint import message_key
from mcp_server_escalation.services import failures, guidance, tasks
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import guidance as guidance_store
from mcp_server_escalation.store import search_tokens
from mcp_server_escalation.store.migrations import MIGRATIONS

pytestmark = pytest.mark.both_backends

BIG = ThresholdOverrides(same_error_repeated=100_000)


@asynccontextmanager
async def _runtime(db_path: str) -> AsyncIterator[Runtime]:
    async with open_runtime(Settings(db_path=db_path, project_root=PROJECT)) as rt:
        yield rt


async def _fail(rt: Runtime, message: str, task_id: str = "s1", **extra: Any) -> str:
    result = await failures.record_failure(rt, FailureReport(task_id=task_id, message=message, **extra))
    return result.failure.failure_id


async def _guidance(rt: Runtime, query: str | None = None, **extra: Any) -> list[tuple[str, bool]]:
    got = await guidance.get_guidance(rt, task_id="s1", query=query, **extra)
    return [(item.failure_id, item.exact_match) for item in got.items]


# --- exact matches ----------------------------------------------------------------------------


async def test_a_query_finds_every_exact_match_by_its_normalised_message(db_path: str) -> None:
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
        same = await _fail(rt, "Timeout after 30s calling tool X")
        await _fail(rt, "Timeout calling tool Y after a retry")
        got = await _guidance(rt, "timeout after 99s calling TOOL x")
    assert got[0] == (same, True)
    assert all(not exact for _, exact in got[1:])


async def test_exact_matches_that_share_the_quoted_name_rank_first_among_them(db_path: str) -> None:
    # One record per task: all five normalise to "keyerror: <str> while handling request",
    # so all are exact matches. The quoted key is the only word that tells them apart, so
    # it decides, even against a higher severity and more occurrences.
    message = "KeyError: '{}' while handling request"
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
        for n, key in enumerate(("user", "cart", "session", "token")):
            await tasks.start_task(rt, title="t", task_id=f"other{n}", thresholds=BIG)
            for _ in range(4):
                await _fail(rt, message.format(key), task_id=f"other{n}", severity="critical")
        await tasks.start_task(rt, title="t", task_id="mine", thresholds=BIG)
        wanted = await _fail(rt, message.format("next_url"), task_id="mine", severity="low")
        first = await _guidance(rt, message.format("next_url"), k=1, scope="project")
        five = await _guidance(rt, message.format("next_url"), k=5, scope="project")
    assert first == [(wanted, True)]
    assert five[0] == (wanted, True)
    assert len(five) == 5
    assert all(exact for _, exact in five)


@pytest.mark.sqlite_only  # every PostgreSQL record is keyed: its store began after migration 6
async def test_a_record_without_a_message_key_still_matches_exactly(db_path: str) -> None:
    # Written by an older version into a migrated store: no key, so the index misses it,
    # but the text search finds it and keys it on the fly.
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
        fid = await _fail(rt, "ImportError: cannot import name 'x' from 'pkg'")
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE failures SET message_key = NULL")
    conn.commit()
    conn.close()
    async with _runtime(db_path) as rt:
        got = await _guidance(rt, "ImportError: cannot import name 'y' from 'lib'")
    assert got == [(fid, True)]


def _word(n: int) -> str:
    """A distinct word per number, letters only (numbers are normalised away)."""
    letters = ""
    while True:
        n, digit = divmod(n, 26)
        letters += chr(ord("a") + digit)
        if n == 0:
            return "mod" + letters


def _store_at_version_5(path: str) -> None:
    """A store exactly as migrations 1-5 left it, with one task and one failure in it."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate_by_hand(conn, upto=5)
    at = "2026-11-01T00:00:00.000Z"
    conn.execute(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json, created_at,"
        " updated_at) VALUES ('s1', 't', ?, 'a', 'active', '{}', ?, ?)",
        (PROJECT, at, at),
    )
    conn.execute(
        "INSERT INTO failures (task_id, project, step, signal_type, classified_by, severity,"
        " fingerprint, message, created_at, last_seen_at) VALUES ('s1', ?, 'main', 'runtime_error',"
        " 'caller', 'high', 'fp-old', 'ValueError: bad value 42 in field ''amount''', ?, ?)",
        (PROJECT, at, at),
    )
    conn.close()


@pytest.mark.sqlite_only  # SQLite's migrations
async def test_migration_6_keys_the_records_written_before_it(empty_path: str) -> None:
    db_path = empty_path  # an older schema is built here by hand
    _store_at_version_5(db_path)
    async with _runtime(db_path) as rt:
        got = await _guidance(rt, "ValueError: bad value 7 in field 'total'")
    conn = sqlite3.connect(db_path)
    keys = conn.execute("SELECT message, message_key FROM failures").fetchall()
    version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    conn.close()
    assert version == MIGRATIONS[-1].version
    assert [key for _, key in keys] == [message_key(keys[0][0])]
    assert got == [("F-1", True)]


# --- which words are searched -------------------------------------------------------------------


async def test_common_words_are_not_searched_when_the_query_has_a_rare_one(db_path: str) -> None:
    # 120 records share "shared build failure": at least DF_SAMPLE records hold each of those
    # words, so only "zebra" is searched, and the records with nothing but common words in
    # common with the query are not candidates.
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
        for n in range(120):
            await _fail(rt, f"shared build failure in module {_word(n)}")
        zebra = await _fail(rt, "zebra crossing refused")
        got = await guidance.get_guidance(rt, task_id="s1", query="zebra shared build failure")
    assert [item.failure_id for item in got.items] == [zebra]
    assert got.candidates == 1


async def test_with_no_rare_word_the_least_common_words_stand_in(db_path: str) -> None:
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
        for n in range(110):
            await _fail(rt, f"shared build failure in module {_word(n)}")
        for n in range(110):
            await _fail(rt, f"shared lint warning in file {_word(n)}")
        got = await guidance.get_guidance(rt, task_id="s1", query="a build failure again", k=3)
    assert len(got.items) == 3
    assert all("build failure" in item.summary for item in got.items)


def test_document_frequency_is_exact_below_the_sample_and_extrapolated_above() -> None:
    assert ranking.document_frequency(0, None, 1000) == 0
    assert ranking.document_frequency(37, 900, 1000) == 37
    # The first 100 records holding the word reach record 400 of 1,000: a quarter of them.
    assert ranking.document_frequency(ranking.DF_SAMPLE, 400, 1000) == pytest.approx(250)


def test_search_words_keeps_the_rare_ones_rarest_first_and_else_the_least_common() -> None:
    tokens = ["error", "parser", "zebra", "unknown", "line"]
    frequencies = [90_000.0, 40.0, 3.0, 0.0, 5_000.0]
    # 1% of 100,000 records is the line: "line" (5%) and "error" are common.
    assert ranking.search_words(tokens, frequencies, 100_000, fallback=True) == ["zebra", "parser"]
    only_common = [90_000.0, 0.0, 0.0, 0.0, 5_000.0]
    assert ranking.search_words(tokens, only_common, 100_000, fallback=True) == ["line"]
    assert ranking.search_words(tokens, only_common, 100_000, fallback=False) == []
    # A small store: DF_SAMPLE records is the line, so 40 of 200 is still rare.
    assert ranking.search_words(tokens, frequencies, 200, fallback=False) == ["zebra", "parser"]
    # Ties keep the query's order.
    assert ranking.search_words(["b", "a"], [2.0, 2.0], 10, fallback=False) == ["b", "a"]


# ASCII, accents (composed and combining), letters whose lower case is ASCII or is not, a
# ligature, a full-width letter, digits of other scripts, a title-case digraph.
TOKEN_CHARACTERS = "aZ9_ .:'-\u00e9\u00c9\u00f1\u0130\u0131\u017f\u00df\u0301\u212a\n\ufb01\uff21\u0663\u01c5"


def _fts5_tokens(text: str) -> list[str]:
    """The tokens FTS5 itself makes of ``text`` with the index's tokenizer (migration 7)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
        return [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]
    finally:
        conn.close()


@given(st.text(alphabet=st.sampled_from(TOKEN_CHARACTERS), max_size=40))
def test_query_tokens_are_the_index_tokens_less_the_volatile_ones(text: str) -> None:
    expected = dict.fromkeys(t for t in _fts5_tokens(text) if not ranking._VOLATILE.match(t))
    assert ranking.query_tokens(text, search_tokens.tokens) == list(expected)[: ranking.MAX_QUERY_TOKENS]


def test_a_lone_surrogate_in_a_query_separates_words() -> None:
    # JSON can carry one; it has no UTF-8 form, so SQLite's tokenizer never sees it.
    assert ranking.query_tokens("x\udfffy caf\u00e9", search_tokens.tokens) == ["x", "y", "cafe"]


def test_distinguishing_words_are_the_ones_normalisation_replaced() -> None:
    assert ranking.distinguishing_words(
        "KeyError: 'next_url' while handling request", search_tokens.tokens
    ) == ["next", "url"]
    assert ranking.distinguishing_words("line too long (120 > 100 characters)", search_tokens.tokens) == []
    assert ranking.distinguishing_words("E501 line too long", search_tokens.tokens) == ["e501"]  # now "e<n>"
    assert ranking.distinguishing_words(
        "cannot write /tmp/build-7/out.o: disk full", search_tokens.tokens
    ) == ["build", "out", "o"]


@pytest.mark.sqlite_only  # SQLite's migrations (both backends: test_guidance_backends.py)
async def test_migration_7_indexes_the_error_and_its_advice_not_the_attempted_action(empty_path: str) -> None:
    db_path = empty_path  # an older schema is built here by hand
    _store_at_version_5(db_path)  # its FTS5 index (migration 3) also held the attempted action
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s7", thresholds=BIG)
        for attempt in ("rewrote the xylophone adapter", "pinned the quokka fixture"):
            await _fail(rt, "zeppelin overflow in ledger", task_id="s7", attempted_action=attempt)
        by_error = await guidance.get_guidance(rt, task_id="s7", query="zeppelin")
        by_action = await guidance.get_guidance(rt, task_id="s7", query="quokka xylophone")
    assert [item.summary for item in by_error.items] == [by_error.items[0].summary]
    assert "zeppelin overflow" in by_error.items[0].summary
    assert by_action.items == []
    conn = sqlite3.connect(db_path)
    try:
        # The rebuilt index agrees with its content table (raises if it does not).
        conn.execute("INSERT INTO failures_fts (failures_fts, rank) VALUES ('integrity-check', 1)")
        columns = [row[1] for row in conn.execute("PRAGMA table_info(failures_fts)")]
    finally:
        conn.close()
    assert "attempted_action" not in columns
    assert "recommended_adjustment" in columns


async def test_the_index_stays_whole_as_records_arrive_one_by_one(db_path: str, backend: str) -> None:
    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s8", thresholds=BIG)
        for n in range(300):  # every one a new record: each adds a segment to the index
            await _fail(rt, f"module {_word(n)} failed to import {_word(n + 1)}", task_id="s8")
        last = await _fail(rt, "module zzz failed to import qqq", task_id="s8")
        got = await guidance.get_guidance(rt, task_id="s8", query="zzz qqq import")
    assert got.items[0].failure_id == last
    if backend != "sqlite":
        return  # the rest checks SQLite's FTS5 index
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("INSERT INTO failures_fts (failures_fts, rank) VALUES ('integrity-check', 1)")
        indexed = conn.execute(
            "SELECT count(*) FROM failures_fts WHERE failures_fts MATCH 'module'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert indexed == 301


# --- one FTS5 query less, the same candidates -------------------------------------------------


def _precise_then_broad(
    conn: Any, where: Any, tokens: list[str], exact: Any, need: int
) -> list[ranking.Candidate]:
    """The plain definition of the rare-word search: the records with every rare word; and,
    when they fall short of ``need``, the records with any of them too."""
    stats = guidance_store.word_stats(conn, tokens, ranking.DF_SAMPLE)
    frequencies = [
        ranking.document_frequency(count, last, stats.records)
        for count, last in zip(stats.counts, stats.last, strict=True)
    ]
    words = ranking.search_words(tokens, frequencies, stats.records, fallback=False)
    precise = guidance_store.lexical(
        conn, where, ranking.Match(tuple(words), all_of=True), newest=guidance.PRECISE_WINDOW, exact=exact
    )
    if len(precise) >= need or len(words) == 1:
        return precise
    broad = guidance_store.lexical(
        conn, where, ranking.Match(tuple(words)), newest=guidance.BROAD_WINDOW, exact=exact
    )
    return broad + precise


def _both_ways(
    conn: Any, *, where: guidance_store.Scope, tokens: list[str], need: int
) -> tuple[list[ranking.Candidate], list[ranking.Candidate], guidance_store.WordStats]:
    exact = guidance_store.Exact("message_key", "none")
    return (
        guidance._lexical(conn, where, tokens, exact, need),
        _precise_then_broad(conn, where, tokens, exact, need),
        guidance_store.word_stats(conn, tokens, ranking.DF_SAMPLE),
    )


async def test_the_word_sets_shortcut_finds_exactly_what_two_searches_find(db_path: str) -> None:
    rng = random.Random(7)  # noqa: S311 (test data)
    # Words of letters only: the fingerprint keeps them, so each message is its own record.
    rare = ["".join(rng.choices("bcdfghjklmnpqrstvwz", k=6)) for _ in range(30)]
    common = ["error", "module"]  # in every record: counted up to the sample, never read whole
    queries = [" ".join(rng.sample(rare, rng.randint(2, 5))) for _ in range(40)]
    scopes = (guidance_store.Scope("task_id", "s1"), guidance_store.Scope("project", PROJECT))
    shortcut = 0
    async with _runtime(db_path) as rt:
        for task_id in ("s1", "s2"):
            await tasks.start_task(rt, title="t", task_id=task_id, thresholds=BIG)
        for size in (25, 260):  # a small store, then one where the common words pass the sample
            while (await _records(rt)) < size:
                words = [*rng.sample(rare, rng.randint(1, 4)), *common]
                await _fail(rt, " ".join(words), task_id=rng.choice(("s1", "s2")))
            for query in queries:
                for where in scopes:
                    tokens = ranking.query_tokens(f"{query} error module", search_tokens.tokens)
                    got, expected, stats = await rt.db.read(
                        functools.partial(_both_ways, where=where, tokens=tokens, need=rng.randint(0, 12))
                    )
                    assert {c.seq: c for c in got} == {c.seq: c for c in expected}, query
                    shortcut += max(stats.counts) < ranking.DF_SAMPLE
    assert 0 < shortcut < 160  # both ways were taken


async def _records(rt: Runtime) -> int:
    return int(await rt.db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM failures").fetchone()[0]))


async def test_the_word_sets_shortcut_is_not_taken_where_the_broad_limit_would_cut(db_path: str) -> None:
    # 120 short records say "qaz" or "wsx" five times: bm25 puts each above the one long
    # record (400 other words) with both words once. The broad search keeps its best 100 (CANDIDATES), so only
    # the search for every word finds that record; and that one record is all a k of 1 needs.
    rng = random.Random(3)  # noqa: S311 (test data)

    def filler(n: int) -> str:
        return " ".join("".join(rng.choices("bcdfghjklmnp", k=7)) for _ in range(n))

    async with _runtime(db_path) as rt:
        await tasks.start_task(rt, title="t", task_id="s1", thresholds=BIG)
        for n in range(120):
            await _fail(rt, f"{' '.join(['qaz' if n % 2 else 'wsx'] * 5)} {filler(1)}")
        both = await _fail(rt, f"qaz {filler(400)} wsx")
        mine = guidance_store.Scope("task_id", "s1")
        got = await rt.db.read(lambda conn: guidance._lexical(conn, mine, ["qaz", "wsx"], None, 1))
    assert [c.seq for c in got] == [int(both.removeprefix("F-"))]
