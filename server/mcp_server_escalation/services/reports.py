"""Operator reports: escalation statistics, notification delivery, store backups, checks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TypeVar

import anyio.to_thread

from ..datafiles import replay_figures
from ..errors import Conflict, InvalidInput
from ..locations import is_database_url
from ..models.reports import BackupReport, Delivery, StatsReport, StoreCheck
from ..rules.bounds.token_scope import Scope
from ..rules.operators import stats as stats_rules
from ..rules.operators import verdicts as verdict_rules
from ..store import outbox as outbox_store
from ..store import reports as report_store
from ..store import search_index
from ..store import verdicts as verdict_store
from ..store.files import ITSELF, part_of_store
from ..store.sql import Conn, is_sqlite
from .runtime import Runtime

T = TypeVar("T")


async def stats(rt: Runtime, within: Scope | None = None) -> StatsReport:
    """Counts by type and status, resolution times, the share answered within an hour, notifier
    health; ``within``: of the tasks a scoped token may see only (None: every task's)."""
    now = rt.clock()

    def read(conn: Conn) -> StatsReport:
        rows = report_store.escalation_times(conn)
        timings = _kept(rows, within)
        # A notifier announces escalations only: the scope's tasks that have any are all it may count.
        tasks = (
            None if within is None else {task for task, project, _ in rows if within.admits(task, project)}
        )
        by_type, by_status, matrix = stats_rules.counts(timings)
        verdicts = verdict_rules.per_project(_kept(verdict_store.verdict_counts(conn), within))
        return StatsReport(
            total=len(timings),
            by_type=by_type,
            by_status=by_status,
            by_type_and_status=matrix,
            resolution=stats_rules.resolution(timings, now),
            notifications=outbox_store.notifier_stats(conn, tasks),
            verdicts=verdicts,
            raise_thresholds=verdict_rules.advice(verdicts),
            judged_by_type=verdict_rules.beside_replay(verdicts, list(replay_figures())),
            per_day=stats_rules.per_day(timings, now),
            generated_at=rt.now(),
        )

    return await rt.db.read(read)


async def answer_time_buckets(rt: Runtime, within: Scope | None = None) -> list[int]:
    """Human answers per bucket of answer time (``rules/operators/stats.py``), from the figures
    ``stats`` uses (``within``: as there)."""
    return await rt.db.read(
        lambda conn: stats_rules.answer_time_buckets(_kept(report_store.escalation_times(conn), within))
    )


def _kept(rows: Iterable[tuple[str, str, T]], within: Scope | None) -> list[T]:
    """What each row of a task (its id, its project, the figure) holds, for the tasks
    ``within`` admits (``Scope.admits``, the check of every scoped list; None: every task)."""
    return [figure for task, project, figure in rows if within is None or within.admits(task, project)]


async def deliveries(rt: Runtime, escalation_id: int) -> list[Delivery]:
    """How the escalation's announcements went, per notifier (oldest first)."""
    return await rt.db.read(lambda conn: outbox_store.deliveries(conn, escalation_id))


async def newest_announcement(rt: Runtime, escalation_id: int) -> int | None:
    """The id of the escalation's newest announcement (the only one ever retried), or None."""
    announced = await rt.db.read(lambda conn: outbox_store.announcements(conn, escalation_id))
    return announced[-1][0] if announced else None


async def backup(rt: Runtime, destination: str, *, overwrite: bool = False) -> BackupReport:
    """An online, consistent copy of the store at ``destination`` (SQLite's backup API)."""
    source = rt.settings.db_path
    if source == ":memory:":
        raise Conflict("db backup: the store is in memory (:memory:); there is no file to back up.")
    # Blocking file work runs off the event loop; the store's own connection is not used.
    return await anyio.to_thread.run_sync(_backup, source, destination, overwrite)


def _backup(source: str, destination: str, overwrite: bool) -> BackupReport:
    target = Path(destination).expanduser()
    if not is_database_url(source):
        _refuse_store_files(source, target)
    if target.is_dir():
        raise InvalidInput("PATH", f"{target} is a folder; give a file name")
    if target.exists() and not overwrite:
        raise Conflict(f"PATH: {target} already exists; pass --force to replace it.")
    if not target.parent.is_dir():
        raise InvalidInput("PATH", f"the folder {target.parent} does not exist")
    return report_store.backup(source, target)


def _refuse_store_files(source: str, target: Path) -> None:
    """A backup replaces its target: never one of the live store's own files (``--force`` or not).

    The copy is first written beside the target, so that file must not be one either.
    """
    partial = report_store.partial_path(target)
    for written in (target, partial):
        found = part_of_store(source, written)
        if found is None:
            continue
        own, what = found
        named = (
            f"{target}" if written == target else f"a backup to {target} is first written to {partial}, which"
        )
        place = "" if what == ITSELF else f" ({own})"
        raise InvalidInput(
            "PATH",
            f"{named} is {what}{place}: replacing it would destroy the live store {source}."
            " Choose another file.",
        )


async def check_store(rt: Runtime, *, repair: bool = False) -> StoreCheck:
    """Both integrity checks of the store: the whole file, and the search index against its
    records; with ``repair``, a damaged index is rebuilt (it is derived data).

    It runs in one write transaction, so it sees one state of the store and a repair
    replaces exactly what it checked; writers in other processes wait for it.
    """

    def check(conn: Conn) -> StoreCheck:
        if not is_sqlite(conn):
            return _server_checked(conn, rt.db.path)
        problems = search_index.file_problems(conn)
        found = search_index.damage(conn)
        state: Literal["ok", "damaged", "rebuilt"] = "ok"
        if found is not None:
            state = "damaged"
            if repair:
                search_index.rebuild(conn)
                state = "rebuilt" if search_index.damage(conn) is None else "damaged"
        records = search_index.indexed_records(conn)
        return StoreCheck(
            path=rt.db.path,
            integrity=problems or ["ok"],
            search_index=state,
            search_index_problem=found,
            failure_records=records,
            ok=not problems and state != "damaged",
        )

    return await rt.db.write(check)


def _server_checked(conn: Conn, path: str) -> StoreCheck:
    """A PostgreSQL store: its server keeps its files and its search index whole (and a
    damaged one is the DBA's to restore), so the check counts what the index covers."""
    records = report_store.failure_records(conn)
    return StoreCheck(
        path=path,
        integrity=["ok"],
        search_index="ok",
        search_index_problem=None,
        failure_records=records,
        ok=True,
    )
