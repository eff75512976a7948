"""A PostgreSQL connection that the store's repositories use as they use a SQLite one.

The repositories write their SQL once, with SQLite's ``?`` placeholders, and read rows by
column name or position. ``PgConn`` takes the same calls (``execute``, ``executemany``,
``fetchone``, ``fetchall``) over a synchronous psycopg connection: it rewrites the
placeholders (once per statement text), and its rows answer to a name and to a position
like ``sqlite3.Row``. Where the two dialects differ in what a statement must say, the
repository asks ``store.sql.is_postgres`` and writes each; this module translates nothing
but placeholders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    # Imported for its types only: psycopg is the optional extra ``[postgresql]``, and every
    # repository imports this module (``store.sql``) on SQLite too.
    import psycopg
    from psycopg.rows import RowMaker

Params = Sequence[Any]


class Row(tuple[Any, ...]):
    """A row read by column name or by position, as ``sqlite3.Row`` is."""

    __slots__ = ()
    _index: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


@lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    # One class per column list: a row carries only its values.
    return type("Row", (Row,), {"__slots__": (), "_index": {name: i for i, name in enumerate(names)}})


def named_row(cursor: psycopg.Cursor[Any]) -> RowMaker[Row]:
    """psycopg's row factory for ``Row``."""
    if cursor.description is None:
        return Row
    return _row_class(tuple(column.name for column in cursor.description))


@lru_cache(maxsize=1024)
def placeholders(sql: str) -> str:
    """``sql`` with each ``?`` outside quotes as psycopg's ``%s`` (and a literal ``%`` doubled)."""
    out: list[str] = []
    quote: str | None = None
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out)


class PgCursor:
    """What ``execute`` answers: the rows of one statement, as a SQLite cursor gives them."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor
        # Set to None by readers that want plain tuples: a ``Row`` already is one.
        self.row_factory: object = None

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def lastrowid(self) -> None:
        # PostgreSQL has no row id: inserts that need theirs say RETURNING.
        return None

    def execute(self, sql: str, params: Params = ()) -> PgCursor:
        # Always a sequence, never None: psycopg reads placeholders (and ``%%``) only then.
        self._cursor.execute(placeholders(sql), tuple(params))
        return self

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def close(self) -> None:
        self._cursor.close()


class PgConn:
    """One psycopg connection as the repositories use it; ``locks_rows`` while it writes."""

    def __init__(self, raw: psycopg.Connection[Any], location: str) -> None:
        from psycopg.rows import tuple_row  # noqa: PLC0415 (psycopg only on this backend)

        self._tuple_row = tuple_row
        self.raw = raw
        self.location = location
        # Set for the duration of a write transaction: reads of the rows it will change take
        # their row locks (``store.sql.for_update``).
        self.locks_rows = False

    def execute(self, sql: str, params: Params = ()) -> PgCursor:
        return PgCursor(self.raw.cursor(row_factory=named_row)).execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        with self.raw.cursor() as cursor:
            cursor.executemany(placeholders(sql), list(rows))

    def tuples(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """Every row of ``sql`` as a plain tuple (hundreds per call where ranking reads them)."""
        with self.raw.cursor(row_factory=self._tuple_row) as cursor:
            cursor.execute(placeholders(sql), tuple(params))
            return cursor.fetchall()

    def close(self) -> None:
        self.raw.close()


Connect = Callable[[], PgConn]
