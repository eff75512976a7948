"""Does guidance find a failure's earlier occurrence? Each backend's ranking, on real runs.

Replays the real runs of both corpora (``--data``: a folder kept outside this repository,
by default ``shared/data`` beside the checkout; read at run time, since the second has no
licence and is never copied into this repository) through the host hook's own plan
(``hooks/plan.py``): every failure a hook would record is recorded with ``record_failure``,
run after run, into one SQLite store and one PostgreSQL store (a project per corpus, a task
per run). The labelled set: a failure *recurs* when its run's same command (whitespace
aside) failed before; its earlier occurrences are the records those earlier failures went
to. Just before a recurring failure is recorded, each ranking is asked with its message,
over every record of the project so far (this run's earlier failures and every earlier
run's); a hit at 1 (at 5) is an earlier occurrence ranked first (among the first five).

Rankings (ties: the newest record first, for all of them):
- ``guidance``: ``get_guidance(query=message, scope="project", k=5)``, the whole answer
  (exact matches, rare words, bm25, severity, recency, helpfulness), on each backend, and on
  PostgreSQL once more with ``ts_rank_cd`` (below) in place of the bm25 emulation;
- ``bm25``: the lexical search alone (``store.guidance.lexical``, every query word, any of
  them, every match scored): FTS5's bm25 on SQLite, its emulation on PostgreSQL;
- PostgreSQL's own, on a weighted ``tsvector`` of its own parser (``simple``: no stemming,
  no stop words) over the columns FTS5 indexes, weights A..D as FTS5's 10/5/2/1:
  ``ts_rank_cd`` (and with normalisation 1, by the log of the record's length), and
  ``pg_trgm``'s distance of the message to the query (``<->``).

Figures are given for every recurrence and for those whose fingerprint changed (the same
command, a different record: no exact match can find it, only the words).

    python benchmarks/measure_search_quality.py [--data DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_server_escalation.hooks.events import HookEvent, tool_kind
from mcp_server_escalation.hooks.plan import FailureCall, Rules, plan_post
from mcp_server_escalation.hooks.runner import observed_failure
from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.rules.guidance import ranking
from mcp_server_escalation.rules.reading.commands import DEFAULT_TEST_COMMAND
from mcp_server_escalation.services import failures, guidance, tasks
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import guidance as guidance_store
from mcp_server_escalation.store import search_tokens
from mcp_server_escalation.store.failures import failure_id
from mcp_server_escalation.store.sql import Conn
from postgres_support import postgres_database  # found through the path entry above
from replay_trajectories import benign, editor_call

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPORA = {"mini-swe-agent": "trajectories-dev.jsonl.gz", "openhands": "trajectories-openhands-dev.jsonl.gz"}
NEVER = ThresholdOverrides(
    same_error_repeated=100_000,
    total_verification_attempts=100_000,
    no_file_changes_after_attempts=100_000,
    max_minutes=1_000_000,
)
# PostgreSQL's own index of the columns FTS5 indexes (``rules.guidance.fts.COLUMNS``), weighted as
# FTS5's bm25 weighs them (message 10, error type 5, tool and class 2, advice 1 -> A..D).
NATIVE = """ALTER TABLE failures ADD COLUMN native tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', message), 'A')
    || setweight(to_tsvector('simple', COALESCE(error_type, '')), 'B')
    || setweight(to_tsvector('simple', COALESCE(tool_name, '') || ' ' || signal_type), 'C')
    || setweight(to_tsvector('simple', COALESCE(recommended_adjustment, '')), 'D')) STORED"""
NATIVE_INDEXES = (
    "CREATE INDEX failures_native ON failures USING GIN (native)",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX failures_trigrams ON failures USING GIST (message gist_trgm_ops)",
)
# Any of the query's words, as PostgreSQL's parser makes them.
_ANY_WORD = (
    "CAST(NULLIF(replace(CAST(strip(to_tsvector('simple', %(q)s)) AS text), ''' ''', ''' | '''), '')"
    " AS tsquery)"
)
_WEIGHTS = "'{0.1, 0.2, 0.5, 1.0}'"  # D, C, B, A
NATIVE_RANKINGS = {
    "ts_rank_cd": f"ts_rank_cd({_WEIGHTS}, f.native, q.q)",
    "ts_rank_cd, normalised": f"ts_rank_cd({_WEIGHTS}, f.native, q.q, 1)",
}
K = 5


class Clock:
    """The replay's time: minutes between a run's steps, hours between runs."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def runs(path: Path, limit: int | None) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                return
            yield json.loads(line)


def recorded_failures(run: dict[str, Any]) -> Iterator[tuple[str, FailureCall]]:
    """(the command, whitespace aside; what the hook records) for each failure of a run."""
    rules = Rules(test_command=DEFAULT_TEST_COMMAND)
    for step in run["steps"]:
        code = step["returncode"]
        if (code is None and not step.get("timed_out")) or code == 0 or benign(step):
            continue
        editor = editor_call(step["command"])
        tool, path = (editor[0], editor[1]["file_path"]) if editor else ("Bash", None)
        event = HookEvent(
            host="claude-code",
            name="PostToolUseFailure",
            kind="post_tool_failure",
            tool_name=tool,
            file_path=path,
            command=None if editor else step["command"],
            output=step["output"],
            exit_code=None if editor else code,
            failure_type="timeout" if step.get("timed_out") else None,
        )
        plan = plan_post(event, tool_kind(tool, servers=()), "/testbed", rules)
        if plan.failure is not None:
            yield " ".join(step["command"].split()), plan.failure


@dataclass
class Score:
    """Hits of one ranking over one labelled set."""

    asked: int = 0
    at_1: int = 0
    at_5: int = 0

    def add(self, ranked: list[str], relevant: set[str]) -> None:
        self.asked += 1
        self.at_1 += bool(ranked[:1] and ranked[0] in relevant)
        self.at_5 += bool(relevant.intersection(ranked[:K]))

    def figures(self) -> str:
        if not self.asked:
            return "none asked"
        return f"top-1 {self.at_1 / self.asked:6.1%}  top-5 {self.at_5 / self.asked:6.1%}"


@dataclass
class Tally:
    """Per corpus, per labelled set, per ranking."""

    scores: dict[tuple[str, str, str], Score] = field(default_factory=lambda: defaultdict(Score))


def _bm25(conn: Conn, project: str, message: str) -> list[str]:
    tokens = ranking.query_tokens(message, search_tokens.tokens)
    if not tokens:
        return []
    found = guidance_store.lexical(
        conn,
        guidance_store.Scope("project", project),
        ranking.Match(tuple(dict.fromkeys(tokens)), all_of=False),
        newest=10**9,
        exact=None,
    )
    return [failure_id(c.seq) for c in sorted(found, key=lambda c: (c.bm25, -c.seq))]


def _native(conn: Any, project: str, message: str, rank: str) -> list[str]:
    rows = conn.raw.execute(
        f"WITH q AS (SELECT {_ANY_WORD} AS q) SELECT f.seq FROM failures f, q"  # noqa: S608 (constants)
        f" WHERE f.project = %(p)s AND f.status = 'active' AND f.native @@ q.q"
        f" ORDER BY {rank} DESC, f.seq DESC LIMIT {K}",
        {"q": message, "p": project},
    ).fetchall()
    return [failure_id(row[0]) for row in rows]


def _lexical_native(
    conn: Any,
    scope: guidance_store.Scope,
    match: ranking.Match,
    *,
    newest: int,
    exact: guidance_store.Exact | None,
    scored: bool,
) -> list[ranking.Candidate]:
    """``store.guidance.lexical`` on PostgreSQL with its own parser and ``ts_rank_cd`` in
    place of the bm25 emulation: the same newest matches of the query's words, the same
    candidate fields, the relevance negated (lower is better, as bm25's)."""
    flag = {"fingerprint": "f.fingerprint = %(exact)s", "message_key": "f.message_key = %(exact)s"}
    relevance = f"-ts_rank_cd({_WEIGHTS}, f.native, q.q)" if scored else "NULL"
    rows = conn.raw.execute(
        "WITH q AS (SELECT CAST(NULLIF(replace(CAST(strip(to_tsvector('simple', %(words)s)) AS text),"  # noqa: S608
        " ''' ''', %(op)s), '') AS tsquery) AS q)"
        " SELECT f.seq, f.severity, f.last_seen_at, f.occurrence_count, f.helpful_count, f.harmful_count,"
        f" {flag[exact.column] if exact else 'FALSE'}, {relevance} FROM"
        " (SELECT seq FROM failures, q WHERE native @@ q.q ORDER BY seq DESC LIMIT %(newest)s) AS m"
        f" JOIN failures f ON f.seq = m.seq CROSS JOIN q WHERE f.{scope.column} = %(scope)s"
        f" AND f.status = 'active' ORDER BY {'8, f.seq' if scored else 'f.seq DESC'} LIMIT %(limit)s",
        {
            "words": " ".join(match.tokens),
            "op": "' & '" if match.all_of else "' | '",
            "newest": newest,
            "scope": scope.value,
            "exact": exact.value if exact else None,
            "limit": guidance_store.CANDIDATES,
        },
    ).fetchall()
    return [ranking.Candidate(*row[:6], bool(row[6]), row[7]) for row in rows]


def _trigrams(conn: Any, project: str, message: str) -> list[str]:
    rows = conn.raw.execute(
        "SELECT seq FROM failures WHERE project = %(p)s AND status = 'active'"  # noqa: S608 (constants)
        f" ORDER BY message <-> %(q)s, seq DESC LIMIT {K}",
        {"q": message, "p": project},
    ).fetchall()
    return [failure_id(row[0]) for row in rows]


# A ranking: (the asking task, its project, the message) -> failure ids, best first.
Ask = Callable[[str, str, str], Awaitable[list[str]]]


def rankings(sqlite: Runtime, pg: Runtime) -> dict[str, Ask]:
    """Every ranking measured, by name."""

    def answer(rt: Runtime, *, native: bool = False) -> Ask:
        async def ask(task_id: str, _project: str, message: str) -> list[str]:
            emulated = guidance_store._lexical_postgres
            if native:  # for this call only: the asks run one after another
                guidance_store._lexical_postgres = _lexical_native  # type: ignore[assignment]
            try:
                got = await guidance.get_guidance(rt, task_id=task_id, query=message, k=K, scope="project")
            finally:
                guidance_store._lexical_postgres = emulated
            return [item.failure_id for item in got.items]

        return ask

    def read(rt: Runtime, fn: Callable[..., list[str]], **extra: str) -> Ask:
        async def ask(_task_id: str, project: str, message: str) -> list[str]:
            return await rt.db.read(lambda conn: fn(conn, project, message, **extra))

        return ask

    return {
        "guidance, SQLite": answer(sqlite),
        "guidance, PostgreSQL (emulated bm25)": answer(pg),
        "guidance, PostgreSQL (ts_rank_cd)": answer(pg, native=True),
        "bm25 alone, SQLite FTS5": read(sqlite, _bm25),
        "bm25 alone, PostgreSQL emulation": read(pg, _bm25),
        **{f"PostgreSQL {name}": read(pg, _native, rank=rank) for name, rank in NATIVE_RANKINGS.items()},
        "PostgreSQL pg_trgm distance": read(pg, _trigrams),
    }


async def replay(
    corpus: str, path: Path, limit: int | None, backends: tuple[Runtime, Runtime], clock: Clock, tally: Tally
) -> None:
    """Record the corpus's failures on both backends, asking every ranking before each recurrence."""
    sqlite, pg = backends
    asks = rankings(sqlite, pg)
    project = f"/replay/{corpus}"
    for number, run in enumerate(runs(path, limit), 1):
        if number % 50 == 0:
            print(f"{corpus}: {number} runs replayed", file=sys.stderr, flush=True)
        task_id = f"{corpus}-{run['instance_id']}"[:120]
        clock.now += timedelta(hours=1)
        for rt in (sqlite, pg):
            await tasks.start_task(
                rt, title=run["instance_id"], task_id=task_id, project=project, thresholds=NEVER
            )
        earlier: dict[str, set[str]] = defaultdict(set)
        for command, call in recorded_failures(run):
            clock.now += timedelta(minutes=2)
            report = observed_failure(task_id=task_id, step="main", **call._asdict())
            relevant = set(earlier[command])
            answers = {}
            if relevant:
                answers = {name: await ask(task_id, project, report.message) for name, ask in asks.items()}
            ids = [(await failures.record_failure(rt, report)).failure.failure_id for rt in (sqlite, pg)]
            if ids[0] != ids[1]:
                raise SystemExit(f"the backends gave {ids[0]} and {ids[1]} to the same failure")
            for name, ranked in answers.items():
                tally.scores[(corpus, "every recurrence", name)].add(ranked, relevant)
                if ids[0] not in relevant:
                    tally.scores[(corpus, "fingerprint changed", name)].add(ranked, relevant)
            earlier[command].add(ids[0])


async def main(data: Path, limit: int | None) -> None:
    tally = Tally()
    clock = Clock()
    with tempfile.TemporaryDirectory() as work, postgres_database("search_quality") as (url, _server):
        async with AsyncExitStack() as stack:
            sqlite, pg = [
                await stack.enter_async_context(
                    open_runtime(Settings(db_path=location, project_root=work), clock)
                )
                for location in (str(Path(work) / "quality.db"), url)
            ]
            for statement in (NATIVE, *NATIVE_INDEXES):
                await pg.db.write(lambda conn, s=statement: conn.raw.execute(s))
            for corpus, name in CORPORA.items():
                await replay(corpus, data / name, limit, (sqlite, pg), clock, tally)
    for corpus in CORPORA:
        for subset in ("every recurrence", "fingerprint changed"):
            asked = {s.asked for (c, sub, _), s in tally.scores.items() if c == corpus and sub == subset}
            print(f"{corpus}, {subset} ({', '.join(map(str, sorted(asked)))} asked):")
            for (c, sub, name), score in tally.scores.items():
                if c == corpus and sub == subset:
                    print(f"  {name:42} {score.figures()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the folder of the corpora")
    parser.add_argument("--runs", type=int, default=None, help="the first N runs of each corpus only")
    arguments = parser.parse_args()
    anyio.run(main, arguments.data, arguments.runs)
