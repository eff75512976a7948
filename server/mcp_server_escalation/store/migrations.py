"""Versioned, append-only schema migrations.

Never edit a migration that has shipped: add the next one. Each is applied in one
transaction together with its row in ``schema_migrations`` (see ``Database.migrate``).
Timestamps are ISO 8601 UTC text with milliseconds (``2026-11-21T10:00:00.000Z``), which
sorts correctly as text. JSON columns end in ``_json``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    """One schema step."""

    version: int
    name: str
    statements: tuple[str, ...]


# The statuses the schema admits, frozen with the migrations that check them (both
# backends'): the vocabulary is ``models.limits``, and tests/test_vocabulary.py fails when
# the two part, since a new status needs a new migration.
TASK_STATUSES = "'active','paused','terminated_by_human','completed','abandoned'"
ESCALATION_STATUSES = (
    "'pending','resolved','resolved_with_override','resolved_with_termination',"
    "'resolved_with_approval','withdrawn','agent_terminated'"
)

# An escalation answered by a human and not yet acknowledged by its agent: migration 14's
# partial index is kept on exactly these terms, and a query that names them all reads it
# (store/operator_queue.py). Frozen here like every shipped migration.
AWAITING_ACKNOWLEDGEMENT = (
    "status != 'pending' AND response_type IS NOT NULL AND response_type != 'withdraw'"
    " AND acknowledged_at IS NULL"
)

_FTS_COLUMNS = "message, error_type, tool_name, signal_type, recommended_adjustment, attempted_action"
# Migration 7 leaves the attempted action out of the index (see there).
_FTS_COLUMNS_7 = "message, error_type, tool_name, signal_type, recommended_adjustment"


# The counters migration 17 moves from their columns into ``counters_json``, as they stood
# then (the model has named every counter since: ``models.tasks.Counters``). Frozen here like
# every shipped migration; PostgreSQL's migration 5 moves the same.
COUNTER_COLUMNS_17 = (
    "consecutive_same_error",
    "last_fingerprint",
    "last_failed_operation",
    "previous_fingerprint",
    "previous_count",
    "previous_operation",
    "last_test_operation",
    "test_operation_best",
    "verification_attempts",
    "attempts_without_file_change",
    "test_runs_without_improvement",
    "tool_calls",
    "failing_test_runs",
    "budget_since",
)
COUNTERS_AS_JSON_17 = ", ".join(f"'{name}', {name}" for name in COUNTER_COLUMNS_17)


# Python's str.strip() removes exactly these characters (those with str.isspace()); as SQL
# for trim(X, Y). Frozen here like every shipped migration; tests/test_feedback_budget.py
# checks it against the running Python.
WHITESPACE_CODES = (
    9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760,
    8192, 8193, 8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202,
    8232, 8233, 8239, 8287, 12288,
)  # fmt: skip
# One rejected attempt (the row ``new``) added to its retry entry: migration 8's trigger
# and its backfill share it, so both collapse alike.
_RETRY_ENTRY_COLUMNS = "task_id, step, feedback, attempts, attempt_count, first_attempt, last_guard, last_at"
_RETRY_ENTRY_VALUES = (
    f"new.task_id, new.step, trim(new.feedback, char({', '.join(map(str, WHITESPACE_CODES))})),"
    " CAST(new.attempt_number AS TEXT), 1, new.attempt_number, new.guard, new.created_at"
)
_RETRY_ENTRY_CONFLICT = """ON CONFLICT (task_id, step, feedback) DO UPDATE SET
        attempts = attempts || ', ' || excluded.attempts,
        attempt_count = attempt_count + 1,
        last_guard = excluded.last_guard,
        last_at = excluded.last_at"""


def _new(alias: str, columns: str = _FTS_COLUMNS) -> str:
    return ", ".join(f"{alias}.{column.strip()}" for column in columns.split(","))


def _changed(columns: str = _FTS_COLUMNS) -> str:
    return " OR ".join(f"old.{c.strip()} IS NOT new.{c.strip()}" for c in columns.split(","))


def _fts_index(columns: str) -> tuple[str, ...]:
    """The external-content FTS5 index over ``columns`` of failures and its three triggers."""
    return (
        f"""CREATE VIRTUAL TABLE failures_fts USING fts5(
            {columns}, content='failures', content_rowid='seq',
            tokenize='unicode61 remove_diacritics 2'
        )""",
        f"""CREATE TRIGGER failures_fts_insert AFTER INSERT ON failures BEGIN
            INSERT INTO failures_fts (rowid, {columns}) VALUES (new.seq, {_new("new", columns)});
        END""",
        f"""CREATE TRIGGER failures_fts_delete AFTER DELETE ON failures BEGIN
            INSERT INTO failures_fts (failures_fts, rowid, {columns})
            VALUES ('delete', old.seq, {_new("old", columns)});
        END""",
        f"""CREATE TRIGGER failures_fts_update AFTER UPDATE OF {columns} ON failures
        WHEN {_changed(columns)} BEGIN
            INSERT INTO failures_fts (failures_fts, rowid, {columns})
            VALUES ('delete', old.seq, {_new("old", columns)});
            INSERT INTO failures_fts (rowid, {columns}) VALUES (new.seq, {_new("new", columns)});
        END""",
        "INSERT INTO failures_fts (failures_fts) VALUES ('rebuild')",
    )


# A task's failure records and their occurrences, and the distinct files of each of its
# generations, as migration 20 keeps them (PostgreSQL's migration 8 keeps the same).
COUNTED_BY_TRIGGERS_20 = (
    """CREATE TABLE task_failure_counts (
        task_id TEXT PRIMARY KEY REFERENCES tasks (task_id),
        records INTEGER NOT NULL,
        occurrences INTEGER NOT NULL
    )""",
    """INSERT INTO task_failure_counts (task_id, records, occurrences)
        SELECT task_id, COUNT(*), SUM(occurrence_count) FROM failures GROUP BY task_id""",
    """CREATE TRIGGER failures_counted AFTER INSERT ON failures BEGIN
        INSERT INTO task_failure_counts (task_id, records, occurrences)
        VALUES (NEW.task_id, 1, NEW.occurrence_count)
        ON CONFLICT (task_id) DO UPDATE SET records = records + 1,
            occurrences = occurrences + excluded.occurrences;
    END""",
    """CREATE TRIGGER failures_recounted AFTER UPDATE OF occurrence_count ON failures
        WHEN NEW.occurrence_count != OLD.occurrence_count BEGIN
        UPDATE task_failure_counts SET occurrences = occurrences + NEW.occurrence_count - OLD.occurrence_count
        WHERE task_id = NEW.task_id;
    END""",
    """CREATE TRIGGER failures_uncounted AFTER DELETE ON failures BEGIN
        UPDATE task_failure_counts SET records = records - 1, occurrences = occurrences - OLD.occurrence_count
        WHERE task_id = OLD.task_id;
    END""",
    """CREATE TABLE modified_file_counts (
        task_id TEXT NOT NULL REFERENCES tasks (task_id),
        generation INTEGER NOT NULL,
        files INTEGER NOT NULL,
        PRIMARY KEY (task_id, generation)
    )""",
    """INSERT INTO modified_file_counts (task_id, generation, files)
        SELECT task_id, generation, COUNT(*) FROM modified_files GROUP BY task_id, generation""",
    """CREATE TRIGGER modified_files_counted AFTER INSERT ON modified_files BEGIN
        INSERT INTO modified_file_counts (task_id, generation, files)
        VALUES (NEW.task_id, NEW.generation, 1)
        ON CONFLICT (task_id, generation) DO UPDATE SET files = files + 1;
    END""",
    """CREATE TRIGGER modified_files_uncounted AFTER DELETE ON modified_files BEGIN
        UPDATE modified_file_counts SET files = files - 1
        WHERE task_id = OLD.task_id AND generation = OLD.generation;
    END""",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "engine: tasks, counters, failures, progress, escalations",
        (
            f"""CREATE TABLE tasks (
                task_id TEXT PRIMARY KEY,
                title TEXT NOT NULL,
                specification TEXT NOT NULL DEFAULT '',
                scope_json TEXT NOT NULL DEFAULT '[]',
                project TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                -- bumps on reassignment; counters and the modified-file set belong to one
                -- generation, history rows keep the generation they were written in
                generation INTEGER NOT NULL DEFAULT 1,
                status TEXT NOT NULL CHECK (status IN ({TASK_STATUSES})),
                thresholds_json TEXT NOT NULL,
                baseline_pass_rate REAL,
                best_pass_rate REAL,
                approach TEXT,
                end_note TEXT,
                consecutive_same_error INTEGER NOT NULL DEFAULT 0,
                last_fingerprint TEXT,
                verification_attempts INTEGER NOT NULL DEFAULT 0,
                attempts_without_file_change INTEGER NOT NULL DEFAULT 0,
                test_runs_without_improvement INTEGER NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                ended_at TEXT
            )""",
            "CREATE INDEX tasks_by_project ON tasks (project, status, updated_at)",
            """CREATE TABLE task_assignments (
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                generation INTEGER NOT NULL,
                agent_id TEXT NOT NULL,
                assigned_at TEXT NOT NULL,
                PRIMARY KEY (task_id, generation)
            )""",
            """CREATE TABLE modified_files (
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                generation INTEGER NOT NULL,
                path TEXT NOT NULL,
                source TEXT NOT NULL CHECK (source IN ('check_edit', 'report_progress')),
                first_at TEXT NOT NULL,
                PRIMARY KEY (task_id, generation, path)
            )""",
            """CREATE TABLE progress_reports (
                report_id INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                generation INTEGER NOT NULL,
                agent_id TEXT NOT NULL,
                step TEXT NOT NULL,
                outcome TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'neutral')),
                files_json TEXT NOT NULL DEFAULT '[]',
                tests_passed INTEGER,
                tests_failed INTEGER,
                pass_rate REAL,
                improved INTEGER,
                note TEXT,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX progress_by_task ON progress_reports (task_id, report_id)",
            """CREATE TABLE failures (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                project TEXT NOT NULL,
                step TEXT NOT NULL,
                phase TEXT,
                signal_type TEXT NOT NULL,
                classified_by TEXT NOT NULL,
                severity TEXT NOT NULL CHECK (severity IN ('low','medium','high','critical')),
                fingerprint TEXT NOT NULL,
                message TEXT NOT NULL,
                error_type TEXT,
                tool_name TEXT,
                error_code TEXT,
                attempted_action TEXT,
                observed_outcome TEXT,
                recommended_adjustment TEXT,
                context_refs_json TEXT NOT NULL DEFAULT '{}',
                details_json TEXT NOT NULL DEFAULT '{}',
                status TEXT NOT NULL DEFAULT 'active'
                    CHECK (status IN ('active','resolved','superseded')),
                superseded_by INTEGER REFERENCES failures (seq),
                occurrence_count INTEGER NOT NULL DEFAULT 1,
                helpful_count INTEGER NOT NULL DEFAULT 0,
                harmful_count INTEGER NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL,
                last_seen_at TEXT NOT NULL,
                UNIQUE (task_id, fingerprint)
            )""",
            "CREATE INDEX failures_by_project ON failures (project, status, fingerprint)",
            "CREATE INDEX failures_by_task_step ON failures (task_id, step, last_seen_at)",
            """CREATE TABLE failure_occurrences (
                occurrence_id INTEGER PRIMARY KEY,
                failure_seq INTEGER NOT NULL REFERENCES failures (seq),
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                generation INTEGER NOT NULL,
                agent_id TEXT NOT NULL,
                step TEXT NOT NULL,
                message TEXT NOT NULL,
                file TEXT,
                line INTEGER,
                attempted_action TEXT,
                details_json TEXT NOT NULL DEFAULT '{}',
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX occurrences_by_failure ON failure_occurrences (failure_seq, occurrence_id)",
            "CREATE INDEX occurrences_by_task ON failure_occurrences (task_id, occurrence_id)",
            """CREATE TABLE actions (
                action_id INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                generation INTEGER NOT NULL,
                agent_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                detail_json TEXT NOT NULL DEFAULT '{}',
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX actions_by_task ON actions (task_id, action_id)",
            f"""CREATE TABLE escalations (
                escalation_id INTEGER PRIMARY KEY AUTOINCREMENT,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                agent_id TEXT NOT NULL,
                generation INTEGER NOT NULL,
                type TEXT NOT NULL,
                priority TEXT NOT NULL CHECK (priority IN ('normal', 'high')),
                blocking INTEGER NOT NULL,
                status TEXT NOT NULL CHECK (status IN ({ESCALATION_STATUSES})),
                triggers_json TEXT NOT NULL DEFAULT '[]',
                response_options_json TEXT NOT NULL,
                context_json TEXT NOT NULL,
                reason TEXT,
                question TEXT,
                options_json TEXT NOT NULL DEFAULT '[]',
                response_type TEXT,
                response_content TEXT,
                new_file_limit INTEGER,
                add_scope_json TEXT,
                responder TEXT,
                responded_at TEXT,
                delivered_at TEXT,
                acknowledged_at TEXT,
                acknowledgement_note TEXT,
                follow_up_of INTEGER REFERENCES escalations (escalation_id),
                revision INTEGER NOT NULL DEFAULT 1,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            "CREATE INDEX escalations_by_status ON escalations (status, escalation_id)",
            "CREATE INDEX escalations_by_task ON escalations (task_id, status)",
            "CREATE INDEX escalations_by_update ON escalations (updated_at)",
        ),
    ),
    Migration(
        2,
        "feedback memory: attempts, escalation feedback per cycle, review findings",
        (
            """CREATE TABLE attempts (
                attempt_id INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                step TEXT NOT NULL,
                attempt_number INTEGER NOT NULL,
                -- the step's escalation cycle when the verdict was given (1 = before any)
                cycle INTEGER NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('accepted', 'rejected')),
                feedback TEXT NOT NULL DEFAULT '',
                guard TEXT,
                artifact TEXT,
                agent_id TEXT NOT NULL,
                generation INTEGER NOT NULL,
                created_at TEXT NOT NULL,
                UNIQUE (task_id, step, attempt_number)
            )""",
            "CREATE INDEX attempts_by_step ON attempts (task_id, step, attempt_id)",
            """CREATE TABLE escalation_feedback (
                feedback_id INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                -- the step that reads this feedback (the stagnating step or an upstream one)
                step TEXT NOT NULL,
                source_step TEXT NOT NULL,
                source_cycle INTEGER NOT NULL,
                summary TEXT NOT NULL,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX escalation_feedback_by_step ON escalation_feedback (task_id, step, feedback_id)",
            """CREATE TABLE review_findings (
                finding_id INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                stage TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('review', 'tool')),
                iteration INTEGER NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('fail', 'partial_success')),
                failure_reason TEXT NOT NULL DEFAULT '',
                response TEXT NOT NULL DEFAULT '',
                created_at TEXT NOT NULL,
                resolved_at TEXT
            )""",
            "CREATE INDEX findings_by_task ON review_findings (task_id, resolved_at, finding_id)",
            "CREATE INDEX findings_by_stage ON review_findings (task_id, stage, finding_id)",
        ),
    ),
    Migration(
        3,
        "guidance: FTS5 index over failures kept in step by triggers, revision history",
        (
            # External-content FTS5 table: the text lives in failures, the index here.
            f"""CREATE VIRTUAL TABLE failures_fts USING fts5(
                {_FTS_COLUMNS}, content='failures', content_rowid='seq',
                tokenize='unicode61 remove_diacritics 2'
            )""",
            f"""CREATE TRIGGER failures_fts_insert AFTER INSERT ON failures BEGIN
                INSERT INTO failures_fts (rowid, {_FTS_COLUMNS})
                VALUES (new.seq, {_new("new")});
            END""",
            f"""CREATE TRIGGER failures_fts_delete AFTER DELETE ON failures BEGIN
                INSERT INTO failures_fts (failures_fts, rowid, {_FTS_COLUMNS})
                VALUES ('delete', old.seq, {_new("old")});
            END""",
            # Only when indexed text changes: a repeat occurrence with the same wording (the
            # common case on the hot path) costs no index work.
            f"""CREATE TRIGGER failures_fts_update AFTER UPDATE OF {_FTS_COLUMNS} ON failures
            WHEN {_changed()} BEGIN
                INSERT INTO failures_fts (failures_fts, rowid, {_FTS_COLUMNS})
                VALUES ('delete', old.seq, {_new("old")});
                INSERT INTO failures_fts (rowid, {_FTS_COLUMNS})
                VALUES (new.seq, {_new("new")});
            END""",
            "INSERT INTO failures_fts (failures_fts) VALUES ('rebuild')",
            "CREATE INDEX failures_by_project_recent ON failures (project, status, last_seen_at)",
            "CREATE INDEX failures_by_task_recent ON failures (task_id, status, last_seen_at)",
            """CREATE TABLE failure_revisions (
                revision_id INTEGER PRIMARY KEY,
                failure_seq INTEGER NOT NULL REFERENCES failures (seq),
                changes_json TEXT NOT NULL,
                note TEXT,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX revisions_by_failure ON failure_revisions (failure_seq, revision_id)",
        ),
    ),
    Migration(
        4,
        "operator side: escalation change feed, notification outbox and deliveries",
        (
            # Every change of an escalation, in commit order, from every process: what
            # `escalations watch` prints and what a server turns into client notifications.
            # Filled by triggers, so no write path (present or future) can forget it.
            """CREATE TABLE escalation_changes (
                change_id INTEGER PRIMARY KEY AUTOINCREMENT,
                escalation_id INTEGER NOT NULL REFERENCES escalations (escalation_id),
                revision INTEGER NOT NULL,
                event TEXT NOT NULL CHECK (event IN
                    ('created','updated','answered','closed','delivered','acknowledged')),
                status TEXT NOT NULL,
                changed_at TEXT NOT NULL
            )""",
            # One row per announcement an operator must get: 'created' (written by the
            # trigger below, in the transaction that creates the escalation) and 'renotify'.
            """CREATE TABLE notification_outbox (
                outbox_id INTEGER PRIMARY KEY AUTOINCREMENT,
                escalation_id INTEGER NOT NULL REFERENCES escalations (escalation_id),
                event TEXT NOT NULL CHECK (event IN ('created', 'renotify')),
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX outbox_by_escalation ON notification_outbox (escalation_id, outbox_id)",
            # Delivery state of one announcement to one configured notifier ('command:<digest>',
            # 'webhook:<digest>'). A sender holds a lease while it sends: a killed sender's
            # lease runs out and the next process that opens the store sends again.
            """CREATE TABLE notification_deliveries (
                outbox_id INTEGER NOT NULL REFERENCES notification_outbox (outbox_id),
                notifier TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at TEXT NOT NULL,
                lease_until TEXT,
                delivered_at TEXT,
                last_error TEXT,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (outbox_id, notifier)
            )""",
            """CREATE TRIGGER escalations_created_feed AFTER INSERT ON escalations BEGIN
                INSERT INTO escalation_changes (escalation_id, revision, event, status, changed_at)
                VALUES (new.escalation_id, new.revision, 'created', new.status, new.created_at);
                INSERT INTO notification_outbox (escalation_id, event, created_at)
                VALUES (new.escalation_id, 'created', new.created_at);
            END""",
            """CREATE TRIGGER escalations_changed_feed AFTER UPDATE ON escalations
            WHEN new.revision IS NOT old.revision BEGIN
                INSERT INTO escalation_changes (escalation_id, revision, event, status, changed_at)
                VALUES (new.escalation_id, new.revision, CASE
                    WHEN old.response_type IS NULL AND new.response_type IS NOT NULL
                        AND new.response_type != 'withdraw' THEN 'answered'
                    WHEN old.status = 'pending' AND new.status != 'pending' THEN 'closed'
                    WHEN old.acknowledged_at IS NULL AND new.acknowledged_at IS NOT NULL
                        THEN 'acknowledged'
                    WHEN old.delivered_at IS NULL AND new.delivered_at IS NOT NULL THEN 'delivered'
                    ELSE 'updated' END, new.status, new.updated_at);
            END""",
            # Escalations still pending when this migration runs are announced too.
            "INSERT INTO notification_outbox (escalation_id, event, created_at)"
            " SELECT escalation_id, 'created', created_at FROM escalations WHERE status = 'pending'",
        ),
    ),
    Migration(
        5,
        "hook events: de-duplication of host hook events by delivery and by tool call",
        (
            """CREATE TABLE hook_events (
                event_id INTEGER PRIMARY KEY,
                host TEXT NOT NULL,
                -- the host's session (Claude Code session_id, Cursor conversation_id)
                session_id TEXT,
                event TEXT NOT NULL,
                tool_name TEXT,
                task_id TEXT REFERENCES tasks (task_id),
                -- one delivery of one host event (post:<tool_use_id>); a second delivery of
                -- the same event finds it taken and changes nothing
                delivery_key TEXT UNIQUE,
                -- one tool call seen through two event kinds without a common id (Cursor's
                -- postToolUse and afterShellExecution): the n-th of each kind per call_base
                call_base TEXT,
                call_source TEXT,
                call_key TEXT,
                counted INTEGER NOT NULL CHECK (counted IN (0, 1)),
                created_at TEXT NOT NULL
            )""",
            "CREATE UNIQUE INDEX hook_events_counted_call ON hook_events (call_key) WHERE counted = 1",
            "CREATE INDEX hook_events_by_base ON hook_events (call_base, call_source)",
            "CREATE INDEX hook_events_by_session ON hook_events (host, session_id, event_id)",
            "CREATE INDEX hook_events_by_time ON hook_events (created_at)",
        ),
    ),
    Migration(
        6,
        "guidance: normalised-message key, so exact query matches are found by index",
        (
            # A record's message never changes (a repeat keeps the first wording), so the
            # key is written once, by the insert; it is not an FTS column, so the backfill
            # below leaves the FTS index alone.
            "ALTER TABLE failures ADD COLUMN message_key TEXT",
            # escalation_message_key() is rules.reading.fingerprint.message_key, registered on every
            # connection the store opens (store.db).
            "UPDATE failures SET message_key = escalation_message_key(message)",
            # Neither column ever changes: repeats (which update status and last_seen_at)
            # cost these indexes nothing.
            "CREATE INDEX failures_by_project_key ON failures (project, message_key)",
            "CREATE INDEX failures_by_task_key ON failures (task_id, message_key)",
        ),
    ),
    Migration(
        7,
        "guidance: the FTS5 index without the attempted action",
        (
            # A repeat of a failure records what was tried this time, so the record's
            # attempted_action changes on nearly every occurrence; indexed, each change cost
            # an FTS5 delete and insert (about a fifth of record_failure). It had the lowest
            # bm25 weight, and a query is an error text, not an action: the index now holds
            # what describes the error and the advice for it.
            "DROP TRIGGER failures_fts_insert",
            "DROP TRIGGER failures_fts_delete",
            "DROP TRIGGER failures_fts_update",
            "DROP TABLE failures_fts",
            *_fts_index(_FTS_COLUMNS_7),
        ),
    ),
    Migration(
        8,
        "feedback memory: rejected attempts kept collapsed as retry entries",
        (
            # get_feedback's retry history is the step's rejected attempts with identical
            # feedback (after strip) collapsed into one entry. Kept collapsed as attempts
            # arrive, it is read newest entry first and only as far as max_chars reaches:
            # a 200-attempt step read and grouped every attempt on every call.
            """CREATE TABLE retry_entries (
                entry_id INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                step TEXT NOT NULL,
                feedback TEXT NOT NULL,
                -- the attempt numbers, oldest first, as the entry lists them: '3, 7, 12'
                attempts TEXT NOT NULL,
                attempt_count INTEGER NOT NULL,
                first_attempt INTEGER NOT NULL,
                last_guard TEXT,
                last_at TEXT NOT NULL,
                UNIQUE (task_id, step, feedback)
            )""",
            # Entries are dropped oldest first by their latest attempt's time (ties: the
            # earlier entry first).
            "CREATE INDEX retry_entries_by_time ON retry_entries (task_id, step, last_at, first_attempt)",
            # Every writer keeps them, whatever its version: attempts are only ever inserted.
            f"""CREATE TRIGGER attempts_retry_entry AFTER INSERT ON attempts
            WHEN new.status = 'rejected' BEGIN
                INSERT INTO retry_entries ({_RETRY_ENTRY_COLUMNS})
                VALUES ({_RETRY_ENTRY_VALUES}) {_RETRY_ENTRY_CONFLICT};
            END""",
            # The attempts stored before, oldest first, as the trigger would have kept them.
            f"""INSERT INTO retry_entries ({_RETRY_ENTRY_COLUMNS})
                SELECT {_RETRY_ENTRY_VALUES} FROM attempts AS new
                WHERE new.status = 'rejected' ORDER BY new.attempt_id {_RETRY_ENTRY_CONFLICT}""",
        ),
    ),
    Migration(
        9,
        "engine: no index rewritten by every tool call that no query reads",
        (
            # Every index page a write touches is one more page its commit writes (a WAL
            # frame, ~4 us). Nothing reads occurrences by task (they are read per record),
            # and the project's tasks are looked up by status, few at a time, so the time of
            # their last change needs no index entry: each counter update rewrote one.
            "DROP INDEX occurrences_by_task",
            "DROP INDEX tasks_by_project",
            "CREATE INDEX tasks_by_project ON tasks (project, status)",
        ),
    ),
    Migration(
        10,
        "search index: rebuilt once, after the merges that could damage it",
        (
            # Earlier versions ran FTS5's 'merge' with a negative page count after every new
            # record, which damages the index on SQLite 3.40 past ~1,076 records (see
            # store/search_index.py). A store written by them may hold a damaged index, or
            # one on its way there: build it anew from the records, once.
            "INSERT INTO failures_fts (failures_fts) VALUES ('rebuild')",
        ),
    ),
    Migration(
        11,
        "operations: what failed and which test command ran, for the same-error and stall rules",
        (
            # A run of identical errors used to end at any successful command, so an agent
            # that edits between tries (sed -i, cat > file) never repeated an error. Only the
            # failing operation succeeding ends it now (rules/decide/triggers.after_success).
            "ALTER TABLE tasks ADD COLUMN last_failed_operation TEXT",
            # A test run is measured against earlier runs of the same test command.
            "ALTER TABLE tasks ADD COLUMN last_test_operation TEXT",
            "ALTER TABLE tasks ADD COLUMN test_operation_best REAL",
        ),
    ),
    Migration(
        12,
        "budgets: a task's tool calls, failing test runs and the start of its minutes",
        (
            # Counted as calls arrive, like the other counters: a budget checked on every call
            # must not count the task's history to do it. A task stored before starts at 0;
            # a NULL start means the task's own start (created_at).
            "ALTER TABLE tasks ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tasks ADD COLUMN failing_test_runs INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tasks ADD COLUMN budget_since TEXT",
        ),
    ),
    Migration(
        13,
        "the run of errors a different failure interrupted",
        (
            # An agent that fixes one error, breaks something else and is back at the first
            # (or alternates between two) was seen as making progress: a different failure
            # ended the run. The interrupted run is kept to come back to (rules/decide/triggers).
            "ALTER TABLE tasks ADD COLUMN previous_fingerprint TEXT",
            "ALTER TABLE tasks ADD COLUMN previous_count INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE tasks ADD COLUMN previous_operation TEXT",
        ),
    ),
    Migration(
        14,
        "what the agent was told when an escalation fired",
        (
            # The directive and message of the tool result that created the escalation, kept
            # as they were: what the agent reads about it later (an answer to acknowledge, a
            # task that ended) says nothing of what it was told to do then. Written once, in
            # the creating transaction; an escalation raised before has no row. A table of its
            # own, so the escalation rows every call reads do not grow by a message each.
            """CREATE TABLE told_at_firing (
                escalation_id INTEGER PRIMARY KEY REFERENCES escalations (escalation_id),
                directive TEXT NOT NULL,
                message TEXT NOT NULL,
                told_at TEXT NOT NULL
            )""",
            # The console's queue holds the answers an agent has not acknowledged yet, paged
            # newest first; without this index each page read every answered escalation ever
            # stored. Partial: it holds the few rows waiting, not the answered history.
            f"""CREATE INDEX escalations_awaiting_acknowledgement ON escalations (escalation_id)
            WHERE {AWAITING_ACKNOWLEDGEMENT}""",
        ),
    ),
    Migration(
        15,
        "operators' verdicts on escalations",
        (
            # Was the escalation useful or a false alarm, in the words of the operator who
            # answered it: counted per type and project, the triggers' precision on the
            # team's own runs. A table of its own, read by no agent-facing call.
            """CREATE TABLE verdicts (
                escalation_id INTEGER PRIMARY KEY REFERENCES escalations (escalation_id),
                verdict TEXT NOT NULL CHECK (verdict IN ('useful', 'false_alarm')),
                judged_by TEXT NOT NULL,
                judged_at TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        16,
        "waits for a human's answer run as MCP tasks",
        (
            # A client that takes a wait as a task polls it later, maybe from a server started
            # since: the task is a row, and its state is read from its escalation at each poll
            # (adapters/mcp/task_waits.py). The result is kept once complete, so every later
            # poll returns the same. Rows older than the task's lifetime are deleted, by age.
            """CREATE TABLE escalation_waits (
                wait_id TEXT PRIMARY KEY,
                escalation_id INTEGER NOT NULL REFERENCES escalations (escalation_id),
                owner TEXT NOT NULL,
                asking TEXT NOT NULL CHECK (asking IN ('form', 'url', 'no')),
                status TEXT NOT NULL CHECK (status IN ('working', 'completed', 'cancelled')),
                result_json TEXT,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            "CREATE INDEX escalation_waits_by_age ON escalation_waits (created_at)",
        ),
    ),
    Migration(
        17,
        "a task's counters as one JSON document",
        (
            # Three migrations (11, 12, 13) only added counters, and every counter was named
            # in four places of the store. As one document, as the thresholds are, a counter
            # is a field of the model alone: one a store does not hold yet reads as its
            # default, so a new counter needs no migration.
            "ALTER TABLE tasks ADD COLUMN counters_json TEXT NOT NULL DEFAULT '{}'",
            f"UPDATE tasks SET counters_json = json_object({COUNTERS_AS_JSON_17})",
            *(f"ALTER TABLE tasks DROP COLUMN {name}" for name in COUNTER_COLUMNS_17),
        ),
    ),
    Migration(
        18,
        "waits looked up by their escalation",
        (
            # An escalation keeps its newest WAITS_PER_ESCALATION_MAX waits: each new one
            # finds the escalation's others by this index, not by reading every wait.
            "CREATE INDEX escalation_waits_by_escalation ON escalation_waits (escalation_id, created_at)",
        ),
    ),
    Migration(
        19,
        "a wait run as a task ends when the caller's wait does",
        (
            # The caller asked to wait so long and no longer: a task still pending then
            # completes with what get_escalation answers a wait that timed out, read with the
            # revision the caller named. A wait started before has neither, and waits on.
            "ALTER TABLE escalation_waits ADD COLUMN ends_at TEXT",
            "ALTER TABLE escalation_waits ADD COLUMN known_revision INTEGER",
        ),
    ),
    Migration(
        20,
        "a task's counts kept as its history grows",
        (
            # get_task and every task read counted a task's failure records, occurrences and
            # modified files from their rows: a cost that grew with the task's history. The
            # counts are kept instead, by triggers in the writing transaction, so every route
            # that writes those rows (the tools, the hooks, a copy of a store) keeps them exact.
            *COUNTED_BY_TRIGGERS_20,
            # A task's latest modified files, read newest first from this index (not sorted).
            "CREATE INDEX modified_files_by_time ON modified_files (task_id, generation, first_at, path)",
        ),
    ),
)
