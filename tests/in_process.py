"""The console script's ``main`` run inside the test process, as a subprocess would run it.

Starting the installed script costs a Python start-up and the imports (~0.3 s a run; the
hook tests make hundreds of runs). Where what a test checks is the command's behaviour and
not the process boundary, it runs ``launch.main`` here instead: the same argument list, the
same bytes on stdin, the same environment and working folder (swapped in for the run),
stdout and stderr captured, the exit code from the return value or ``SystemExit``. A few tests per entry point
still start the real script (``hooks_support.run_script``) to keep the boundary covered.

Runs are serialised (one lock): the environment, ``sys.argv`` and the standard streams are
process-wide. The command runs in a worker thread because it starts its own event loop.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
import traceback
from collections.abc import Mapping
from pathlib import Path

import anyio

from bounds import HUNG_AFTER
from mcp_server_escalation import launch

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
_ONE_AT_A_TIME = threading.Lock()
# As cli.main's logging.basicConfig sets it up in a fresh process of an operator or hook command.
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _exit_code(exc: SystemExit) -> tuple[int, str]:
    """The status a process ends with for ``exc``, and what the interpreter prints for it."""
    if exc.code is None:
        return 0, ""
    if isinstance(exc.code, int):
        return exc.code, ""
    return 1, f"{exc.code}\n"


def _main(
    args: list[str], stdin: bytes, env: Mapping[str, str], cwd: Path | None
) -> tuple[int, bytes, bytes]:
    stdout, stderr = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(stdout, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(stderr, encoding="utf-8", write_through=True)
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    with _ONE_AT_A_TIME:
        saved_env, saved_cwd = dict(os.environ), Path.cwd()
        saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, root.level)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [str(SCRIPT), *args]
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        sys.stdout, sys.stderr = out, err
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
        if cwd is not None:
            os.chdir(cwd)
        try:
            try:
                code = launch.main()
            except SystemExit as exc:
                code, said = _exit_code(exc)
                err.write(said)
            except BaseException:  # noqa: BLE001 (what the interpreter does with an uncaught one)
                err.write(traceback.format_exc())
                code = 1
            out.flush()
            err.flush()
        finally:
            root.removeHandler(handler)
            sys.argv, sys.stdin, sys.stdout, sys.stderr, level = saved
            root.setLevel(level)
            os.environ.clear()
            os.environ.update(saved_env)
            os.chdir(saved_cwd)
    return code, stdout.getvalue(), stderr.getvalue()


async def run_main(
    args: list[str], *, stdin: bytes = b"", env: Mapping[str, str], cwd: Path | None = None
) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of ``mcp-server-escalation ARGS`` run in this process."""
    with anyio.fail_after(HUNG_AFTER):  # a hang guard, as for the subprocess
        return await anyio.to_thread.run_sync(_main, args, stdin, dict(env), cwd, abandon_on_cancel=True)
