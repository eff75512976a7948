"""The process a command runs in, when it is the console script's own.

Before a server answers its first request it has built ~90,000 objects that live as long as
it does: the modules, classes and models of the SDK and of this package, the tools, the
prompts. ``server_ready`` freezes them out of the collector's passes, so that neither the
full passes while it serves nor the interpreter's passes at exit walk them again: a stdio
server takes ~17% less CPU from spawn to exit (``benchmarks/bench_process_life.py``).

Only a process the console script started is frozen. ``cli.main`` run by a caller (the
tests, a program embedding the server) leaves that caller's collector as it found it.
"""

from __future__ import annotations

import gc


class _Process:
    # Set by the console script's entry point before anything else runs.
    own = False


def claim() -> None:
    """This process is the console script's: the command may tune it."""
    _Process.own = True


def server_ready() -> None:
    """What the process built so far lives as long as it: leave it out of the collector's passes."""
    if _Process.own:
        gc.freeze()
