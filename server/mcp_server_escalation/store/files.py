"""The files one store is made of, so that no command writes over a live one.

SQLite keeps a store in its file and, beside it, files named after it: the write-ahead log
(``-wal``, holding every write since the last checkpoint), its shared-memory index
(``-shm``) and, outside WAL mode, a rollback journal (``-journal``). Replacing the WAL of a
running store once lost every acknowledged write since the last checkpoint, and every
other process then got "disk I/O error"; opening a WAL as a store of its own writes pages
into it. Paths are compared after resolving them (``~``, ``..``, symlinks; SQLite names the
companions after the resolved file), and as files (hard links) when both exist.
"""

from __future__ import annotations

from pathlib import Path

COMPANIONS = {
    "-wal": "write-ahead log",
    "-shm": "shared memory (the write-ahead log's index)",
    "-journal": "rollback journal",
}
ITSELF = "the store itself"


def store_files(store: str) -> dict[Path, str]:
    """Every file of the store at ``store`` (it need not exist yet), resolved, with what it is."""
    files: dict[Path, str] = {}
    for base in (Path(store).expanduser().absolute(), Path(store).expanduser().resolve()):
        files.setdefault(base, ITSELF)
        for suffix, what in COMPANIONS.items():
            files.setdefault(base.with_name(base.name + suffix), f"the store's {what}")
    return files


def part_of_store(store: str, candidate: Path) -> tuple[Path, str] | None:
    """Which file of the store ``candidate`` is (the file, what it is), or None."""
    resolved = candidate.expanduser().resolve()
    for own, what in store_files(store).items():
        if resolved == own or _same_file(resolved, own):
            return own, what
    return None


def companion_of(path: str) -> tuple[Path, str] | None:
    """The store whose WAL, shared memory or journal ``path`` is (the store, what), or None.

    Only a path named like a companion and beside an existing file of that name counts: a
    store may well be called ``notes-journal`` when no ``notes`` is there.
    """
    for candidate in (Path(path).expanduser().absolute(), Path(path).expanduser().resolve()):
        for suffix, what in COMPANIONS.items():
            if candidate.name.endswith(suffix) and len(candidate.name) > len(suffix):
                store = candidate.with_name(candidate.name.removesuffix(suffix))
                if store.is_file():
                    return store, what
    return None


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.samefile(second)
    except OSError:  # one of them does not exist: not the same file
        return False
