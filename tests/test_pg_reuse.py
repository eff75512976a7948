"""The worker's one PostgreSQL database: what a test wrote is gone before the next test, and a
test that left more than rows behind gets a fresh copy of the template."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

import pg_local as pg
from conftest import connect
from pg_reuse import ReusedDatabase
from store_contents import contents


@pytest.fixture
def database(pg_server: pg.PgServer, migrated_template: str) -> Iterator[ReusedDatabase]:
    reused = ReusedDatabase(pg_server, migrated_template)
    yield reused
    reused.close()
    pg_server.drop_database(reused.name)


async def _fill(url: str) -> dict[str, object]:
    """A task, an escalation fired by three repeats, its feed and outbox rows, an answer."""
    async with connect(url) as agent:
        await agent.call("start_task", task_id="t1", title="Migrate the cache")
        for _ in range(3):
            result = await agent.call("record_failure", task_id="t1", message="KeyError: 'ttl'", file="a.py")
        return result["escalation"]  # type: ignore[no-any-return]


async def test_a_reset_leaves_what_the_template_holds_and_numbers_from_one_again(
    database: ReusedDatabase,
) -> None:
    fresh = contents(database.url)
    first = await _fill(database.url)
    assert contents(database.url) != fresh

    database.reset()

    assert contents(database.url) == fresh
    with psycopg.connect(database.url) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() != (0,)
        assert conn.execute("SELECT records FROM failure_search_totals").fetchone() == (0,)
    again = await _fill(database.url)
    assert again["escalation_id"] == first["escalation_id"]


async def test_a_session_left_open_gets_the_next_test_a_fresh_copy(
    pg_server: pg.PgServer, database: ReusedDatabase
) -> None:
    fresh = contents(database.url)
    left_open = psycopg.connect(database.url)
    try:
        left_open.execute("INSERT INTO tasks (task_id) SELECT 'x' WHERE false")
        old_name = database.name
        database.reset()
        assert database.name != old_name
        assert contents(database.url) == fresh
    finally:
        left_open.close()
    with pg_server.connect() as admin:
        names = {row[0] for row in admin.execute("SELECT datname FROM pg_database")}
    assert old_name not in names


async def test_a_changed_schema_gets_the_next_test_a_fresh_copy(database: ReusedDatabase) -> None:
    with psycopg.connect(database.url) as conn:
        conn.execute("ALTER TABLE tasks ADD COLUMN added_by_a_test text")
    old_name = database.name

    database.reset()

    assert database.name != old_name
    with psycopg.connect(database.url) as conn:
        columns = {row[0] for row in conn.execute("SELECT column_name FROM information_schema.columns")}
    assert "added_by_a_test" not in columns
