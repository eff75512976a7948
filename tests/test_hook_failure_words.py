"""What a person reads when a hook run fails unexpectedly (a bug): a sentence from
``prompts/hooks.toml`` on stderr (no decision, the host goes on, where the details are), and
the details (the exception and its traceback) in the log of the store's relay daemons, beside
its socket; never a traceback or a repr on stderr.

The failure is a real one in the installed script: a store whose task row holds thresholds
that are not JSON, which no code path expects (it is no outage: nothing is spooled or
retried). A database's own error is worded as the store's failure, not as a bug
(``tests/test_hooks_claim.py``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from hooks_support import bash_failure, hook_log, hook_process, relaying
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.prompts import PromptBook

PREFIX = "mcp-server-escalation hook: "
BOOK = PromptBook.load(data_dir("prompts"))
OFF = {"ESCALATION_HOOK_RELAY": "off"}


async def _broken_store(
    tmp_path: Path, damage: str = "UPDATE tasks SET thresholds_json = '{not json'"
) -> str:
    """A store with one event recorded, then damaged: by default its task's thresholds
    overwritten with a text that is not JSON."""
    db = str(tmp_path / "s.db")
    first = await hook_process(
        "claude-code", bash_failure("npm test", "Error: one", "toolu_one"), db=db, tmp=tmp_path, **OFF
    )
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(damage)
        conn.commit()
    return db


def _assert_details(log: Path, runs: int) -> None:
    details = log.read_text(encoding="utf-8")
    assert details.count("failed unexpectedly; no decision:") == runs, details
    assert details.count("Traceback (most recent call last)") == runs, details
    assert "pydantic_core._pydantic_core.ValidationError: 1 validation error for Thresholds" in details


async def test_the_hook_says_it_met_a_bug_and_where_the_details_are(tmp_path: Path) -> None:
    db = await _broken_store(tmp_path)
    log = hook_log(db, tmp_path)
    run = await hook_process(
        "claude-code", bash_failure("npm test", "Error: two", "toolu_two"), db=db, tmp=tmp_path, **OFF
    )

    assert (run.returncode, run.stdout) == (0, "")  # no decision: the host goes on
    assert run.stderr == PREFIX + BOOK.render("hook_failed", log=str(log)) + "\n"
    _assert_details(log, 1)


async def test_without_a_log_the_hook_says_the_errors_kind_and_message_on_a_second_line(
    tmp_path: Path,
) -> None:
    db = await _broken_store(tmp_path, "DROP TABLE tasks")  # a database's error: the store's words
    runtime = tmp_path / "runtime"
    shared = runtime / "mcp-server-escalation"
    shared.mkdir(parents=True)
    shared.chmod(0o755)  # others may enter it: the hook refuses the folder, so no log
    event = bash_failure("npm test", "Error: two", "toolu_two")
    run = await hook_process("claude-code", event, db=db, tmp=tmp_path, XDG_RUNTIME_DIR=str(runtime), **OFF)

    assert (run.returncode, run.stdout) == (0, "")
    error = BOOK.render("hook_failed_error", kind="OperationalError", message="no such table: tasks")
    assert run.stderr == PREFIX + BOOK.render("hook_store_failed_unlogged") + "\n" + PREFIX + error + "\n"
    assert "Traceback" not in run.stderr
    assert list(shared.iterdir()) == []


async def test_a_relayed_hook_run_says_the_same_and_its_details_go_to_the_same_log(tmp_path: Path) -> None:
    db = await _broken_store(tmp_path)
    log = hook_log(db, tmp_path)
    event = bash_failure("npm test", "Error: two", "toolu_two")
    with relaying(db, tmp_path) as relay_log:
        run = await hook_process("claude-code", event, db=db, tmp=tmp_path, ESCALATION_HOOK_RELAY="require")

    assert (run.returncode, run.stdout) == (0, "")
    assert run.stderr == PREFIX + BOOK.render("hook_failed", log=str(log)) + "\n"
    _assert_details(log, 1)
    said = " ".join(relay_log.read_text(encoding="utf-8").split())
    assert f"relayed hook event failed unexpectedly; its details are in {log}" in said
    assert "Traceback" not in said  # once, in the hook log, not twice
