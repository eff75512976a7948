"""What the PostgreSQL store does that SQLite gets from its one writer: notifications of
changes, a change feed whose ids commit in order, migrations once, servers by URL."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import psycopg
import pytest

from conftest import connect
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.store.backends import open_store


async def test_a_change_committed_by_another_server_is_announced_to_a_listening_one(pg_url: str) -> None:
    async with connect(pg_url) as agent:
        await agent.call("start_task", title="Heard", task_id="h-1")
    listener = await open_store(pg_url)
    heard: list[int] = []
    news = anyio.Event()

    def on_notify() -> None:
        heard.append(1)
        news.set()

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(listener.listen_for_changes, on_notify)
                await news.wait()  # listening: the first call comes once LISTEN is in place
                news = anyio.Event()
                before = len(heard)
                async with connect(pg_url) as other_server:
                    await other_server.call("raise_escalation", task_id="h-1", reason="Anyone?")
                await news.wait()
                tg.cancel_scope.cancel()
    finally:
        await listener.close()
    assert len(heard) > before


def _insert_escalation(conn: psycopg.Connection, task_id: str) -> None:
    conn.execute(
        "INSERT INTO escalations (task_id, agent_id, generation, type, priority, blocking, status,"
        " response_options_json, context_json, created_at, updated_at)"
        " VALUES (%s, 'a', 1, 'ask_human', 'normal', 1, 'pending', '[]', '{}', 't', 't')",
        (task_id,),
    )


@pytest.fixture
def two_connections(pg_url: str) -> Iterator[tuple[psycopg.Connection, psycopg.Connection]]:
    first, second = psycopg.connect(pg_url), psycopg.connect(pg_url)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


async def test_a_later_change_id_never_commits_before_an_earlier_one(
    pg_url: str, two_connections: tuple[psycopg.Connection, psycopg.Connection]
) -> None:
    async with connect(pg_url) as agent:
        await agent.call("start_task", title="Ordered", task_id="o-1")
    first, second = two_connections
    _insert_escalation(first, "o-1")  # its change is id 1, not committed yet
    second_pid = second.info.backend_pid
    done = threading.Event()

    def later() -> None:
        _insert_escalation(second, "o-1")
        second.commit()
        done.set()

    thread = threading.Thread(target=later)
    thread.start()
    with psycopg.connect(pg_url, autocommit=True) as watcher:
        with anyio.fail_after(30):
            while watcher.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (second_pid,)
            ).fetchone() != ("Lock",):
                await anyio.sleep(0.01)
        assert not done.is_set()  # the second waits for the first's commit
        first.commit()
        thread.join(30)
        changes = watcher.execute(
            "SELECT change_id, escalation_id FROM escalation_changes ORDER BY change_id"
        ).fetchall()
    assert done.is_set()
    assert changes == [(1, 1), (2, 2)]


async def test_servers_opening_a_new_database_together_migrate_it_once(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    stores = []

    async def open_one() -> None:
        stores.append(await open_store(pg_url))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(open_one)
    versions = [await store.schema_version() for store in stores]
    for store in stores:
        await store.close()
    with psycopg.connect(pg_url) as conn:
        applied = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    assert len(set(versions)) == 1
    assert [row[0] for row in applied] == list(range(1, versions[0] + 1))


async def test_a_read_only_command_refuses_a_database_no_server_has_set_up(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    with pytest.raises(Exception, match="holds no escalation store yet"):
        await open_store(pg_url, create=False)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('tasks')").fetchone() == (None,)


async def test_the_url_shown_in_messages_has_no_password(pg_url: str) -> None:
    with_password = pg_url.replace("://esc@", "://esc:s3cret@")
    store = await open_store(with_password)
    try:
        assert "s3cret" not in store.path
        assert "***" in store.path
    finally:
        await store.close()


async def test_a_task_another_server_creates_meanwhile_is_resumed_not_refused(pg_url: str) -> None:
    store = await open_store(pg_url)  # migrated, as a running server leaves it
    await store.close()
    other_server = psycopg.connect(pg_url)  # its transaction stays open until it commits below
    other_server.execute(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json,"
        " created_at, updated_at)"
        " VALUES ('both', 'Started elsewhere', '/work/project', 'agent', 'active', %s, 't', 't')",
        (Thresholds().model_dump_json(),),
    )
    other_server.execute(
        "INSERT INTO task_assignments (task_id, generation, agent_id, assigned_at)"
        " VALUES ('both', 1, 'agent', 't')"
    )
    started: list[dict[str, object]] = []
    try:
        async with connect(pg_url) as agent:

            async def start() -> None:
                started.append(await agent.call("start_task", title="Started here", task_id="both"))

            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(start)
                    with psycopg.connect(pg_url, autocommit=True) as watcher:
                        while watcher.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        ).fetchone() != (1,):
                            await anyio.sleep(0.01)
                    other_server.commit()  # the waiting insert finds the task there
    finally:
        other_server.close()
    [result] = started
    assert result["created"] is False
    assert result["task"]["title"] == "Started elsewhere"  # type: ignore[index]
