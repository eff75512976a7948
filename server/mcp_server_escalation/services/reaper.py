"""Runs one notifier command and ends every process it started, however they left.

Started by the notifier (``notifiers.py``) as a script of its own, by path, with the
standard library alone (``python -I reaper.py COMMAND``): no import of this package, so an
attempt costs a bare interpreter's start.

On Linux this process makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``):
a process the command started whose parent exits (a daemon that forks, leaves its session
with ``setsid`` and forks again) is given to this process instead of to init, whatever its
environment, group or session. When the command exits, or when this process is told to stop
(SIGTERM: the attempt's timeout, or the server's own end through ``PR_SET_PDEATHSIG``), it
kills its children, takes each one's orphans in turn, and exits only once it has no child
left. Elsewhere (no ``prctl``) it says so on stderr once and relies on the command's
process group, which the notifier kills.

The command cannot end this process on the way: its shell's parent (``$PPID``) is a shell
of its own between them, and that shell and the command run in a process group of their own,
so ``kill -9 $PPID`` ends only that shell and ``trap 'kill -KILL 0' EXIT`` only the command's
group. Whatever they leave running is then handed to this process, which is still there to end
it. (Without a subreaper the command stays in this process's group, the one the notifier kills.)

Exit status: the command's; 143 when stopped by SIGTERM before the command exited.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOPPED = 128 + signal.SIGTERM
UNCONTAINED = "notifier: no child subreaper on this system; only the command's process group is stopped"


def become_subreaper() -> bool:
    """Adopt the command's orphans, and be told to stop when the notifier's process dies."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True


def children() -> list[int]:
    """The pids whose parent is this process (orphans adopted included), from /proc."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so after the last ")".
        if stat[stat.rfind(")") + 2 :].split(" ", 2)[1] == me:
            found.append(int(entry.name))
    return found


def end_descendants() -> None:
    """Kill every child and reap it, then the orphans each left, until none is left. A sweep
    that finds no child means none: a process is adopted only when a descendant dies, and
    every living descendant descends from a child (or zombie) the sweep lists."""
    while pids := children():
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)  # killed: its own children are now ours


def main(command: str) -> int:
    contained = become_subreaper()
    if not contained:
        sys.stderr.write(UNCONTAINED + "\n")
        sys.stderr.flush()

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(STOPPED)

    signal.signal(signal.SIGTERM, stop)
    try:
        # stdin, stdout and stderr are the notifier's pipes, passed through as they are. The
        # outer shell waits for the command's (``; exit``: it cannot exec it in its place), so
        # the command's $PPID is that shell, never this process.
        if sys.platform == "win32":
            return subprocess.call(command, shell=True)  # noqa: S602 (the user's own configured command)
        between = ["/bin/sh", "-c", '/bin/sh -c "$1"; exit $?', "sh", command]
        return subprocess.call(between, process_group=0 if contained else None)  # noqa: S603 (as above)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop is enough: the sweep finishes
        if contained:
            end_descendants()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
