"""What tests/test_pg_exactly_once.py and benchmarks/bench_exactly_once.py share: writes told
apart by their words, the answers that say whether a write was kept, the loop that terminates
every session of a database, and what the database holds afterwards.

Both count each write's text in the database against what its caller was told, so a write's
text must be its own: a failure's fingerprint drops numbers, so the call number is spelt in
words.
"""

from __future__ import annotations

import threading
from collections import Counter

import psycopg

import pg_local

# What the model reads when a write was not kept (make it again) or may have been.
NOTHING_RECORDED = "Nothing of this call was recorded"
MAYBE_RECORDED = "it may or may not have been recorded"
# How often an agent makes a call again that was answered "not recorded".
AGAIN = 3
# High enough that no trigger fires: these calls are about writes, not escalations.
NO_TRIGGERS = {
    "same_error_repeated": 1_000_000,
    "total_verification_attempts": 1_000_000,
    "no_file_changes_after_attempts": 1_000_000,
    "no_test_improvement_after": 1_000_000,
    "files_modified_exceeds": 1_000_000,
}
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def call_text(name: str, n: int) -> str:
    """The text of agent ``name``'s call ``n``, its number spelt in words."""
    return f"{name} call {' '.join(WORDS[int(d)] for d in str(n))}"


def stored(url: str) -> Counter[str]:
    """How often each call's text is in the database (failures and progress notes)."""
    with psycopg.connect(url) as conn:
        failures = conn.execute("SELECT message FROM failure_occurrences").fetchall()
        notes = conn.execute("SELECT note FROM progress_reports WHERE note IS NOT NULL").fetchall()
    texts = [str(m).removeprefix("RuntimeError: ") for (m,) in failures]
    return Counter(texts + [str(n) for (n,) in notes])


def terminate_in_a_loop(
    server: pg_local.PgServer, dbname: str, every_s: float, stop: threading.Event, killed: list[int]
) -> None:
    """Every session on ``dbname`` but this one, terminated every ``every_s`` until ``stop``;
    how many each round ended goes to ``killed``."""
    with server.connect() as admin:
        while not stop.is_set():
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            ).fetchall()
            killed.append(len(rows))
            stop.wait(every_s)
