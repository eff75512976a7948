"""Tasks, their counters and the set of modified files."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ..models.tasks import Counters, Task
from ..models.thresholds import Thresholds
from .sql import Conn, Row, lock

# The files count is kept per generation as the rows arrive (migration 20): a task read
# costs the same however many files the task has touched.
_SELECT = """
SELECT t.*,
       COALESCE((SELECT c.files FROM modified_file_counts c
         WHERE c.task_id = t.task_id AND c.generation = t.generation), 0) AS files_modified
  FROM tasks t
"""

# Columns ``update`` may set: identifiers come from this allow-list, values are parameters.
_UPDATABLE = frozenset(
    {
        "title",
        "specification",
        "scope_json",
        "agent_id",
        "generation",
        "status",
        "thresholds_json",
        "baseline_pass_rate",
        "best_pass_rate",
        "approach",
        "end_note",
        "counters_json",
        "ended_at",
    }
)


@lru_cache(maxsize=256)
def _thresholds(text: str) -> Thresholds:
    # Thresholds are frozen and a store holds few distinct sets: parse each one once.
    return Thresholds.model_validate_json(text)


# Counters the store derives rather than keeps: a task's distinct modified paths are its
# rows of ``modified_files``.
_DERIVED_COUNTERS = {"files_modified"}


def _counters_json(counters: Counters) -> str:
    """The counters as the row keeps them: every one, the rules' own bookkeeping too, which
    results leave out (its fields are excluded from every dump of the model)."""
    kept = {name: getattr(counters, name) for name in Counters.model_fields if name not in _DERIVED_COUNTERS}
    return json.dumps(kept, separators=(",", ":"))


def _counters(text: str, files_modified: int) -> Counters:
    """The counters a task row keeps as one document; a counter it does not hold yet (one
    added since it was written) reads as its default."""
    return Counters.model_validate({**json.loads(text), "files_modified": files_modified})


def _task(row: Row) -> Task:
    return Task(
        task_id=row["task_id"],
        title=row["title"],
        specification=row["specification"],
        scope=json.loads(row["scope_json"]),
        project=row["project"],
        agent_id=row["agent_id"],
        generation=row["generation"],
        status=row["status"],
        thresholds=_thresholds(row["thresholds_json"]),
        baseline_pass_rate=row["baseline_pass_rate"],
        best_pass_rate=row["best_pass_rate"],
        approach=row["approach"],
        end_note=row["end_note"],
        counters=_counters(row["counters_json"], row["files_modified"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        ended_at=row["ended_at"],
    )


def get(conn: Conn, task_id: str) -> Task | None:
    """The task, or None."""
    # In a write, the row stays locked until it commits: no other writer counts on it meanwhile.
    lock(conn, "SELECT 1 FROM tasks WHERE task_id = ?", (task_id,))
    row = conn.execute(_SELECT + " WHERE t.task_id = ?", (task_id,)).fetchone()
    return _task(row) if row else None


def project_of(conn: Conn, task_id: str) -> str | None:
    """The task's project, or None when there is no such task (no full task is built)."""
    row = conn.execute("SELECT project FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return str(row[0]) if row else None


def list_tasks(conn: Conn, *, status: str | None = None, limit: int = 100) -> list[Task]:
    """Tasks, most recently updated first."""
    where, params = ("WHERE t.status = ?", [status]) if status else ("", [])
    query = f"{_SELECT} {where} ORDER BY t.updated_at DESC, t.task_id LIMIT ?"
    return [_task(row) for row in conn.execute(query, (*params, limit)).fetchall()]


def insert(
    conn: Conn,
    *,
    task_id: str,
    title: str,
    specification: str,
    scope: list[str],
    project: str,
    agent_id: str,
    thresholds: Thresholds,
    baseline_pass_rate: float | None,
    now: str,
) -> bool:
    """A new active task in its first generation; False when a task of that id exists (one
    another server created since this transaction looked: it waited for that commit)."""
    created = conn.execute(
        "INSERT INTO tasks (task_id, title, specification, scope_json, project, agent_id,"
        " status, thresholds_json, baseline_pass_rate, best_pass_rate, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)"
        " ON CONFLICT (task_id) DO NOTHING RETURNING task_id",
        (
            task_id,
            title,
            specification,
            json.dumps(scope),
            project,
            agent_id,
            thresholds.model_dump_json(),
            baseline_pass_rate,
            baseline_pass_rate,
            now,
            now,
        ),
    ).fetchone()
    if created is None:
        return False
    conn.execute(
        "INSERT INTO task_assignments (task_id, generation, agent_id, assigned_at) VALUES (?, 1, ?, ?)",
        (task_id, agent_id, now),
    )
    return True


def _update(conn: Conn, task_id: str, now: str, **columns: Any) -> None:
    """Set the given columns (from a fixed allow-list) and ``updated_at``."""
    unknown = set(columns) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    names = sorted(columns)
    assignments = ", ".join(f"{name} = ?" for name in names)
    conn.execute(
        f"UPDATE tasks SET {assignments}, updated_at = ? WHERE task_id = ?",  # noqa: S608 (allow-listed names)
        (*(columns[name] for name in names), now, task_id),
    )


def set_status(conn: Conn, task_id: str, status: str, now: str) -> None:
    """A live task's status: ``paused`` while an escalation holds it, else ``active``."""
    _update(conn, task_id, now, status=status)


def end(conn: Conn, task_id: str, status: str, note: str | None, now: str) -> None:
    """The task ends now with that status and note."""
    _update(conn, task_id, now, status=status, end_note=note, ended_at=now)


def set_approach(conn: Conn, task_id: str, approach: str, now: str) -> None:
    """The approach a human's override gave the task."""
    _update(conn, task_id, now, approach=approach)


def set_thresholds(conn: Conn, task_id: str, thresholds: Thresholds, now: str) -> None:
    """The task's effective thresholds from now on."""
    _update(conn, task_id, now, thresholds_json=thresholds.model_dump_json())


def set_limits(conn: Conn, task_id: str, thresholds: Thresholds, scope: list[str], now: str) -> None:
    """The thresholds and scope an approval gave the task."""
    _update(conn, task_id, now, thresholds_json=thresholds.model_dump_json(), scope_json=json.dumps(scope))


def _save_counters(conn: Conn, task_id: str, counters: Counters, now: str, **extra: Any) -> None:
    _update(conn, task_id, now, counters_json=_counters_json(counters), **extra)


def save_counters(conn: Conn, task_id: str, counters: Counters, now: str) -> None:
    """Persist the counters (files_modified is derived, never stored)."""
    _save_counters(conn, task_id, counters, now)


def save_progress(
    conn: Conn, task_id: str, counters: Counters, best_pass_rate: float | None, now: str
) -> None:
    """Persist the counters and the best pass rate after a progress report."""
    _save_counters(conn, task_id, counters, now, best_pass_rate=best_pass_rate)


def reassign(conn: Conn, task: Task, agent_id: str, now: str) -> None:
    """Hand the task to another agent: a new generation with zeroed counters and budgets."""
    generation = task.generation + 1
    fresh = Counters(budget_since=now)
    _save_counters(conn, task.task_id, fresh, now, agent_id=agent_id, generation=generation)
    conn.execute(
        "INSERT INTO task_assignments (task_id, generation, agent_id, assigned_at) VALUES (?, ?, ?, ?)",
        (task.task_id, generation, agent_id, now),
    )


def modified_files(conn: Conn, task: Task) -> list[str]:
    """The distinct normalised paths modified in the task's current generation, in order."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT path FROM modified_files WHERE task_id = ? AND generation = ? ORDER BY first_at, path",
            (task.task_id, task.generation),
        ).fetchall()
    ]


def latest_modified_files(conn: Conn, task: Task, limit: int) -> tuple[list[str], int]:
    """The latest ``limit`` of those paths (in order), and how many there are (the task's
    kept count, read with it)."""
    rows = conn.execute(
        "SELECT path FROM modified_files WHERE task_id = ? AND generation = ?"
        " ORDER BY first_at DESC, path DESC LIMIT ?",
        (task.task_id, task.generation, limit),
    ).fetchall()
    return [row[0] for row in reversed(rows)], task.counters.files_modified


def already_modified(conn: Conn, task: Task, paths: list[str]) -> set[str]:
    """Those of ``paths`` already in the task's modified set (one indexed lookup each)."""
    if not paths:
        return set()
    unique = sorted(set(paths))
    marks = ", ".join("?" * len(unique))
    rows = conn.execute(
        f"SELECT path FROM modified_files WHERE task_id = ? AND generation = ? AND path IN ({marks})",  # noqa: S608 (placeholders only)
        (task.task_id, task.generation, *unique),
    ).fetchall()
    return {row[0] for row in rows}


def add_modified_files(conn: Conn, task: Task, paths: list[str], source: str, now: str) -> None:
    """Add paths to the modified set; a path already there is not counted again."""
    conn.executemany(
        "INSERT INTO modified_files (task_id, generation, path, source, first_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [(task.task_id, task.generation, path, source, now) for path in paths],
    )


def latest_active_in_project(conn: Conn, project: str) -> Task | None:
    """The project's most recently updated active or paused task."""
    row = conn.execute(
        _SELECT + " WHERE t.project = ? AND t.status IN ('active', 'paused')"
        " ORDER BY t.updated_at DESC, t.task_id LIMIT 1",
        (project,),
    ).fetchone()
    return _task(row) if row else None
