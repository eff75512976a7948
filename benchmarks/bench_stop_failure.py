"""How many ``StopFailure`` events are recorded when the host kills the hook at once.

``claude -p`` ends the hook's process group 15-50 ms after the event as it exits. Each run
starts the command ``hook install claude-code`` writes for ``StopFailure`` as the host
starts a command hook (``/bin/sh -c``, in a process group of its own), writes the event to
its stdin, kills the group ``--after`` seconds later, and waits up to 30 s for the record.
Runs go one at a time, as one headless run ends on one error. ``--load N`` adds N busy
processes for the whole measurement (a machine whose cores are taken); ``--only bash`` runs
with a ``PATH`` that has ``sh`` and ``bash`` and no ``setsid``, as on macOS, ``--only
setsid`` one with ``sh`` and ``setsid`` and no ``bash``. Each run's shell first writes a
marker with a builtin (``: > file``), so a lost run tells whether the shell had started.

    python benchmarks/bench_stop_failure.py --runs 20 --after 0.02 --load 10 --only bash
    python benchmarks/bench_stop_failure.py --runs 20 --after 0.02 --load 10 --only setsid
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from killed_hooks import killed_after  # found through the path entry above

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
EVENT = {
    "hook_event_name": "StopFailure",
    "error": "rate_limit",
    "error_details": "429 Too Many Requests",
    "last_assistant_message": "API Error: Rate limit reached",
    "transcript_path": "/tmp/t.jsonl",
}
RECORD_WAIT = 30.0


@contextlib.contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` busy loops while in use."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(processes)
    ]
    try:
        time.sleep(5 if processes else 0)  # the load average catches up
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def installed_command(project: Path, db: str, env: dict[str, str]) -> str:
    subprocess.run(
        [str(SCRIPT), "hook", "install", "claude-code", "--db", db, "--project-dir", str(project)],
        check=True,
        capture_output=True,
        env=env,
        timeout=60,
    )
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    return str(settings["hooks"]["StopFailure"][0]["hooks"][0]["command"])


def recorded(db: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            return int(conn.execute("SELECT COALESCE(SUM(occurrence_count), 0) FROM failures").fetchone()[0])
        except sqlite3.OperationalError:
            return 0  # no store yet


def marker(project: Path, session: str) -> Path:
    """The file the run's shell writes first: it had started."""
    return project / f"started-{session}"


def killed_run(command: str, session: str, project: Path, env: dict[str, str], after: float) -> None:
    payload = json.dumps({**EVENT, "session_id": session, "cwd": str(project)}).encode()
    killed_after(f": > {marker(project, session)}; {command}", payload, project, env, after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--after", type=float, default=0.02, help="seconds from the event to the kill")
    parser.add_argument("--load", type=int, default=0, help="busy processes added meanwhile")
    parser.add_argument("--only", choices=["bash", "setsid"], help="a PATH of sh and this one only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stop-failure-") as folder:
        root = Path(folder)
        project, home = root / "project", root / "home"
        project.mkdir()
        home.mkdir()
        db = str(root / "hook.db")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "ESCALATION_HOOK_RELAY": "no-daemon",
            "ESCALATION_TASK": "bench-stop-failure",
            "CLAUDE_PROJECT_DIR": str(project),
        }
        command = installed_command(project, db, env)
        if args.only:
            bare = root / "bin"
            bare.mkdir()
            for name in ("sh", args.only):
                (bare / name).symlink_to(str(shutil.which(name)))
            env["PATH"] = str(bare)
        lost, started = [], []
        with busy(args.load):
            loads = [os.getloadavg()[0]]
            for run in range(args.runs):
                before = recorded(db)
                killed_run(command, f"killed-{run}", project, env, args.after)
                deadline = time.monotonic() + RECORD_WAIT
                while recorded(db) == before and time.monotonic() < deadline:
                    time.sleep(0.05)
                if recorded(db) == before:
                    lost.append(run)
                    if marker(project, f"killed-{run}").exists():
                        started.append(run)
            loads.append(os.getloadavg()[0])
    kept = args.runs - len(lost)
    detach = f"{args.only} alone" if args.only else "what the PATH has first (bash)"
    print(
        f"{kept} of {args.runs} recorded, killed {args.after * 1000:.0f} ms after the event, "
        f"detached by {detach}, load average {min(loads):.1f}-{max(loads):.1f} "
        f"(+{args.load} busy processes); lost runs: {lost or 'none'}, "
        f"of which the shell had started: {started or 'none'}"
    )


if __name__ == "__main__":
    main()
