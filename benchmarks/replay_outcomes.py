"""Each run's outcome under one config, replayed once: in parallel processes, and kept on disk.

Every figure of the replay (``replay_folds.py``) is computed from the per-run outcomes
(``Replayed``: where the run was paused and by what, where it was warned, its length, its hook
errors), so judging a config many ways, fold by fold or against a length cap, costs one replay
per config per corpus. A rerun costs nothing: the outcomes are kept under a key made of the
corpus file's contents, the config file's contents, how the hooks were run (in this process
or the installed one), the git HEAD of the server code (the last commit that changed
``server/`` or ``prompts/``: a commit of docs or benchmarks keeps the outcomes) and a hash of
the code that decides as it stands (the server package with its data, ``prompts/``, and the
replay's own ``replay_core.py``, committed or not). Any change to one of these is another key,
so an outcome is never read back for other code.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from replay_core import Pause, Replayed, replay_one, runs

ROOT = Path(__file__).resolve().parents[1]
# What decides a run's outcome, besides the corpus and the config.
DECIDING = (
    ROOT / "server" / "mcp_server_escalation",
    ROOT / "prompts",
    Path(__file__).with_name("replay_core.py"),
)
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-server-escalation-replay"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def code_digest() -> str:
    """The server code's git HEAD and a hash of every file under ``DECIDING`` (compiled files
    left out)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%H", "--", "server", "prompts"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = "no git"
    files = sorted(
        path
        for place in DECIDING
        for path in ([place] if place.is_file() else place.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    )
    hashed = hashlib.sha256(head.encode())
    for path in files:
        hashed.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return hashed.hexdigest()


def cache_key(corpus: Path, config: str | None, process: bool, code: str) -> str:
    """The key of a corpus's outcomes under a config (module docstring)."""
    parts = {
        "corpus": _digest(corpus.read_bytes()),
        "config": _digest(Path(config).read_bytes()) if config else "defaults",
        "hooks": "installed process" if process else "in process",
        "code": code,
    }
    return _digest(json.dumps(parts, sort_keys=True).encode())[:32]


def to_record(number: int, outcome: Replayed) -> dict[str, Any]:
    """One line of the cache: the run's place in its corpus and its outcome."""
    return {
        "number": number,
        **outcome._asdict(),
        "pause": outcome.pause._asdict() if outcome.pause else None,
    }


def from_record(record: dict[str, Any]) -> Replayed:
    """The outcome a cache line holds."""
    pause = record["pause"]
    return Replayed(
        record["run"],
        record["resolved"],
        record["steps"],
        Pause(pause["step"], tuple(pause["types"]), pause["headline"], pause["error_line"])
        if pause
        else None,
        tuple(record["warnings"]),
        record["hook_errors"],
    )


def _cached(path: Path) -> dict[int, Replayed]:
    """The outcomes kept at ``path``, by the run's place in its corpus; a line cut short (a
    replay interrupted while writing) is left out."""
    found: dict[int, Replayed] = {}
    if not path.exists():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        found[record["number"]] = from_record(record)
    return found


def _replay_in_worker(job: tuple[int, dict[str, Any], str | None, bool]) -> tuple[int, Replayed]:
    """One run in a worker process, into a store of its own that is thrown away after."""
    number, run, config, process = job
    with tempfile.TemporaryDirectory(prefix="replay-") as folder:
        # A short runtime folder: the relay daemon's socket path must fit in 108 bytes.
        runtime = Path(folder) / "run"
        return number, asyncio.run(replay_one(run, Path(folder) / "run.db", config, process, runtime))


def outcomes(
    corpus: Path,
    config: str | None,
    *,
    jobs: int = 2,
    process: bool = False,
    limit: int | None = None,
    start: int = 0,
    cache: Path | None = CACHE,
    code: str | None = None,
) -> list[Replayed]:
    """The outcome of every selected run of ``corpus`` under ``config``, in corpus order:
    read from ``cache`` (None: none kept), the others replayed in ``jobs`` processes."""
    selected = list(enumerate(runs(corpus, limit, start), start))
    kept: dict[int, Replayed] = {}
    store = None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        store = cache / f"{cache_key(corpus, config, process, code or code_digest())}.jsonl"
        kept = _cached(store)
    missing = [(number, run, config, process) for number, run in selected if number not in kept]
    for number, outcome in _replay_all(missing, jobs):
        kept[number] = outcome
        if store is not None:
            with store.open("a", encoding="utf-8") as out:
                out.write(json.dumps(to_record(number, outcome)) + "\n")
    for number, run in selected:
        assert kept[number].run == run["instance_id"], f"{store}: run {number} is not {run['instance_id']}"
    return [kept[number] for number, _ in selected]


def _replay_all(
    work: list[tuple[int, dict[str, Any], str | None, bool]], jobs: int
) -> Iterable[tuple[int, Replayed]]:
    """Each run's outcome as it comes (in order), in ``jobs`` processes (1: in this one)."""
    if jobs <= 1 or len(work) <= 1:
        yield from map(_replay_in_worker, work)
        return
    # spawn: a worker starts clean, holding none of this process's open stores or loops.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        yield from pool.map(_replay_in_worker, work, chunksize=4)
