"""Host hook events: one row per delivered event that recorded or gated something.

Two keys keep one tool call from counting twice:

- ``delivery_key``: one delivery of one host event (``post:<tool_use_id>``). The same event
  delivered again (the hook registered in two settings files, Cursor running the Claude
  Code hooks as well as its own) finds its key taken and does nothing.
- ``call_key``: one tool call seen through two *kinds* of event that carry no common id
  (Cursor's ``postToolUse`` and ``afterShellExecution`` of one command). Each kind numbers
  the events of one ``call_base`` (generation + command or file) in arrival order; the
  n-th of one kind and the n-th of the other are the same call, so only the first to
  arrive is counted (``counted = 1``).

A claim is made inside the transaction that writes what it guards (services/hooks.py,
``record_once``): a record that fails takes its claim with it, so the host's next delivery
of the event is recorded instead of being skipped as a duplicate.
"""

from __future__ import annotations

from .sql import Conn


def claim(
    conn: Conn,
    *,
    host: str,
    session_id: str | None,
    event: str,
    tool_name: str | None,
    task_id: str | None,
    delivery_key: str | None,
    call_base: str | None,
    call_source: str | None,
    now: str,
) -> bool:
    """Record the event; True when it is the first sighting of its tool call (count it)."""
    if (
        delivery_key is not None
        and conn.execute("SELECT 1 FROM hook_events WHERE delivery_key = ?", (delivery_key,)).fetchone()
    ):
        return False
    call_key = None
    counted = True
    if call_base is not None and call_source is not None:
        row = conn.execute(
            "SELECT COUNT(*) FROM hook_events WHERE call_base = ? AND call_source = ?",
            (call_base, call_source),
        ).fetchone()
        call_key = f"{call_base}#{int(row[0]) + 1}"
        counted = not conn.execute(
            "SELECT 1 FROM hook_events WHERE call_key = ? AND counted = 1", (call_key,)
        ).fetchone()
    conn.execute(
        "INSERT INTO hook_events (host, session_id, event, tool_name, task_id, delivery_key,"
        " call_base, call_source, call_key, counted, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            host,
            session_id,
            event,
            tool_name,
            task_id,
            delivery_key,
            call_base,
            call_source,
            call_key,
            int(counted),
            now,
        ),
    )
    return counted


def last_session_task(conn: Conn, host: str, session_id: str) -> str | None:
    """The task the host session's latest recorded event belonged to."""
    row = conn.execute(
        "SELECT task_id FROM hook_events WHERE host = ? AND session_id = ? AND task_id IS NOT NULL"
        " ORDER BY event_id DESC LIMIT 1",
        (host, session_id),
    ).fetchone()
    return str(row[0]) if row else None


def prune(conn: Conn, before: str) -> None:
    """Forget events older than ``before``: duplicates arrive within seconds, not weeks."""
    conn.execute("DELETE FROM hook_events WHERE created_at < ?", (before,))
