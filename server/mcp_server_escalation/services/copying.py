"""``db copy SOURCE TARGET``: a store moved between backends (SQLite to PostgreSQL and back).

Run it while no server writes the source: the copy is the source as one read saw it. The
target must hold no rows yet (a new SQLite file, or a database no server has written); the
rows are written in one transaction and checked against the source's counts before it
commits, so a copy is whole or not there at all.
"""

from __future__ import annotations

import functools

from ..errors import Conflict, InvalidInput
from ..models.reports import CopyReport
from ..store import copying
from ..store import failures as failure_store
from ..store.backends import Store, open_store


async def copy_store(source: str, target: str) -> CopyReport:
    """Every row of the store at ``source`` into the empty store at ``target``."""
    if ":memory:" in (source, target):
        raise InvalidInput(
            "SOURCE" if source == ":memory:" else "TARGET", "a store in memory cannot be copied"
        )
    if source == target:
        raise InvalidInput("TARGET", "is the source itself; give another store")
    src = await open_store(source, create=False)
    try:
        dst = await open_store(target)
        try:
            return await _copy(src, dst)
        finally:
            await dst.close()
    finally:
        await src.close()


async def _copy(src: Store, dst: Store) -> CopyReport:
    held = await dst.read(copying.held_rows)
    if held:
        raise Conflict(
            f"TARGET: {dst.path} already holds {held} rows; db copy writes only into an empty store"
            " (nothing was written)"
        )
    snapshot = await src.read(copying.read_all)
    rows = await dst.write(
        functools.partial(copying.write_all, snapshot=snapshot, reindex=failure_store.reindex_search)
    )
    return CopyReport(source=src.path, target=dst.path, rows=rows, total=sum(rows.values()))
