"""Progress reports (attempts, test runs) and the action history."""

from __future__ import annotations

import json
from typing import Any

from ..models.tasks import Action, ProgressEntry, Task, TestRun
from .sql import Conn, Row


def insert_report(
    conn: Conn,
    task: Task,
    *,
    step: str,
    outcome: str,
    files: list[str],
    tests_passed: int | None,
    tests_failed: int | None,
    pass_rate: float | None,
    improved: bool | None,
    note: str | None,
    now: str,
) -> None:
    """One report_progress call."""
    conn.execute(
        "INSERT INTO progress_reports (task_id, generation, agent_id, step, outcome,"
        " files_json, tests_passed, tests_failed, pass_rate, improved, note, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            task.task_id,
            task.generation,
            task.agent_id,
            step,
            outcome,
            json.dumps(files),
            tests_passed,
            tests_failed,
            pass_rate,
            None if improved is None else int(improved),
            note,
            now,
        ),
    )


def _entry(row: Row) -> ProgressEntry:
    return ProgressEntry(
        at=row["created_at"],
        step=row["step"],
        agent_id=row["agent_id"],
        outcome=row["outcome"],
        files=json.loads(row["files_json"]),
        note=row["note"],
        tests_passed=row["tests_passed"],
        tests_failed=row["tests_failed"],
        pass_rate=row["pass_rate"],
    )


def recent_reports(conn: Conn, task: Task, limit: int) -> list[ProgressEntry]:
    """The latest ``limit`` reports of the current generation, oldest first."""
    rows = conn.execute(
        "SELECT * FROM (SELECT * FROM progress_reports WHERE task_id = ? AND generation = ?"
        " ORDER BY report_id DESC LIMIT ?) AS latest ORDER BY report_id",
        (task.task_id, task.generation, limit),
    ).fetchall()
    return [_entry(row) for row in rows]


def list_test_runs(conn: Conn, task_id: str, limit: int = 200) -> list[TestRun]:
    """The task's latest test runs (every agent), oldest first."""
    rows = conn.execute(
        "SELECT * FROM (SELECT * FROM progress_reports WHERE task_id = ? AND pass_rate IS NOT NULL"
        " ORDER BY report_id DESC LIMIT ?) AS latest ORDER BY report_id",
        (task_id, limit),
    ).fetchall()
    return [
        TestRun(
            at=row["created_at"],
            step=row["step"],
            agent_id=row["agent_id"],
            passed=row["tests_passed"] or 0,
            failed=row["tests_failed"] or 0,
            pass_rate=row["pass_rate"],
            improved=bool(row["improved"]),
        )
        for row in rows
    ]


def latest_test_run(conn: Conn, task_id: str) -> TestRun | None:
    """The task's most recent test run."""
    runs = list_test_runs(conn, task_id, limit=1)
    return runs[-1] if runs else None


def add_action(conn: Conn, task: Task, kind: str, detail: dict[str, Any], now: str) -> None:
    """Append to the task's action history."""
    conn.execute(
        "INSERT INTO actions (task_id, generation, agent_id, kind, detail_json, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (task.task_id, task.generation, task.agent_id, kind, json.dumps(detail, sort_keys=True), now),
    )


# An action as stored: when, by whom, what kind, and its detail as JSON text.
ActionRow = tuple[str, str, str, str]


def recent_action_rows(conn: Conn, task_id: str, limit: int) -> list[ActionRow]:
    """The task's latest ``limit`` actions as stored, oldest first (their detail unparsed)."""
    rows = conn.execute(
        "SELECT * FROM (SELECT action_id, created_at, agent_id, kind, detail_json FROM actions"
        " WHERE task_id = ? ORDER BY action_id DESC LIMIT ?) AS latest ORDER BY action_id",
        (task_id, limit),
    ).fetchall()
    return [(row[1], row[2], row[3], row[4]) for row in rows]


def actions_after(conn: Conn, task_id: str, after: int, limit: int) -> list[tuple[int, Action]]:
    """At most ``limit`` of the task's actions after the action ``after`` (0: from the first),
    oldest first, each with its id (the place the next page starts after)."""
    rows = conn.execute(
        "SELECT * FROM actions WHERE task_id = ? AND action_id > ? ORDER BY action_id LIMIT ?",
        (task_id, after, limit),
    ).fetchall()
    return [
        (
            int(row["action_id"]),
            Action(
                at=row["created_at"],
                agent_id=row["agent_id"],
                kind=row["kind"],
                detail=json.loads(row["detail_json"]),
            ),
        )
        for row in rows
    ]


def count_actions(conn: Conn, task_id: str, upto: int | None = None) -> int:
    """How many actions the task has (``upto``: only those up to that action id)."""
    if upto is None:
        row = conn.execute("SELECT COUNT(*) FROM actions WHERE task_id = ?", (task_id,)).fetchone()
    else:
        row = conn.execute(
            "SELECT COUNT(*) FROM actions WHERE task_id = ? AND action_id <= ?", (task_id, upto)
        ).fetchone()
    return int(row[0])


def latest_failure_id(conn: Conn, task_id: str, within: int) -> str | None:
    """The failure the task recorded last among its latest ``within`` actions, or None.

    Read backwards from the task's newest action, at most ``within`` of them: the cost does
    not grow with the task's history."""
    row = conn.execute(
        "SELECT detail_json FROM (SELECT kind, detail_json FROM actions WHERE task_id = ?"
        " ORDER BY action_id DESC LIMIT ?) AS latest WHERE kind = 'record_failure' LIMIT 1",
        (task_id, within),
    ).fetchone()
    found = json.loads(row["detail_json"]).get("failure_id") if row else None
    return str(found) if found else None
