"""The two operator notifiers of the ``[notify]`` table, and how each one sends.

- ``command``: a shell command; the announcement's JSON goes to its stdin and a few facts
  go to its environment (``ESCALATION_ID``, ``ESCALATION_EVENT``, ``ESCALATION_TYPE``,
  ``ESCALATION_PRIORITY``, ``ESCALATION_TASK_ID``, ``ESCALATION_TEXT``) for one-liners such
  as ``notify-send "$ESCALATION_TEXT"``. Exit status 0 is a delivery. Its stdout is
  discarded (a stdio server's stdout belongs to the protocol); the tail of its stderr
  becomes the recorded error. It runs in its own process group, killed as a whole when
  the attempt ends: at its exit, on timeout or when cancelled. Whatever it starts ends
  with it, also a process that leaves the group (``setsid``, a daemon forking twice): each
  attempt marks its command's environment with an id of its own
  (``ESCALATION_NOTIFY_ATTEMPT``), which every process it starts inherits, and at the end
  every process of ours whose environment carries that id is killed (read from ``/proc``,
  where there is one; elsewhere the process group alone). Only a process started with an
  environment emptied of it (``env -i``) escapes.
- ``webhook_url``: an HTTP(S) POST of the same JSON (it carries a ``text`` summary, which
  chat webhooks display). Any 2xx status is a delivery. Sent with the standard library's
  ``urllib`` in a daemon thread: no dependency beyond what the project already has, and an
  abandoned POST never keeps a process from exiting.

Every call is bounded by ``timeout_seconds``; a failure raises ``DeliveryFailed`` with a
one-line reason that the outbox records and logs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from .. import __version__
from ..rules.announce import payload_body
from ..rules.notify import notifier_key
from ..settings import NotifyConfig

STDERR_TAIL = 2000
# After the command exits, how long its stderr may take to reach us: only what it wrote
# before exiting is still in the pipe (its group is killed at the exit).
STDERR_GRACE_SECONDS = 1.0


# The variable that marks every process one attempt started (see the module's docstring).
ATTEMPT_ENV = "ESCALATION_NOTIFY_ATTEMPT"
# Where a process's environment can be read (Linux); without it only the group is killed.
PROC = "/proc"
# Sweeps of /proc per attempt: one finds a process forked while the sweep before it ran.
SWEEPS = 10


class DeliveryFailed(Exception):
    """A notifier did not accept an announcement; the message says why."""


@dataclass(frozen=True)
class Notifier:
    """One configured notifier."""

    kind: Literal["command", "webhook"]
    target: str

    @property
    def key(self) -> str:
        """Its name in the store: the kind and a digest of the target."""
        return notifier_key(self.kind, self.target)


def configured(config: NotifyConfig) -> list[Notifier]:
    """The notifiers of the ``[notify]`` table (possibly none)."""
    found: list[Notifier] = []
    if config.command and config.command.strip():
        found.append(Notifier("command", config.command))
    if config.webhook_url:
        found.append(Notifier("webhook", config.webhook_url))
    return found


async def send(notifier: Notifier, payload: dict[str, Any], limit_seconds: float) -> None:
    """Hand one announcement to one notifier within ``limit_seconds``, or raise DeliveryFailed."""
    body = payload_body(payload)
    try:
        with anyio.fail_after(limit_seconds):
            if notifier.kind == "command":
                await _run_command(notifier.target, body, _environment(payload))
            else:
                await _post_detached(notifier.target, body, limit_seconds)
    except TimeoutError as exc:
        raise DeliveryFailed(f"no answer within {limit_seconds:g} s") from exc
    except OSError as exc:  # the shell could not be started (no such file, no more processes)
        raise DeliveryFailed(f"cannot run the command: {exc}") from exc


def _environment(payload: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    for name, key in (
        ("ESCALATION_ID", "escalation_id"),
        ("ESCALATION_EVENT", "event"),
        ("ESCALATION_TYPE", "type"),
        ("ESCALATION_PRIORITY", "priority"),
        ("ESCALATION_TASK_ID", "task_id"),
        ("ESCALATION_TEXT", "text"),
    ):
        env[name] = str(payload.get(key, ""))
    return env


async def _run_command(command: str, body: bytes, env: dict[str, str]) -> None:
    posix = sys.platform != "win32"
    attempt = secrets.token_hex(8)
    process = await anyio.open_process(
        command,  # a shell command line, as the user wrote it in their own config
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**env, ATTEMPT_ENV: attempt},
        start_new_session=posix,
    )
    errors = bytearray()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_feed, process, body)
            tg.start_soon(_drain, process, errors)
            code = await process.wait()
            # The command's exit ends the attempt. A child it left in the background would
            # hold stderr open (the attempt then waited for it until its timeout, and each
            # retry left one more such child): the process group goes with the command, and
            # what the command wrote to stderr before it exited is read within a moment.
            _stop(process, posix=posix)
            tg.cancel_scope.deadline = anyio.current_time() + STDERR_GRACE_SECONDS
    finally:
        # A timeout or a cancellation ends the attempt too, whether the shell is still
        # running or has already exited and left children behind.
        _stop(process, posix=posix)
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                await process.wait()
            await process.aclose()
            await anyio.to_thread.run_sync(_kill_marked, f"{ATTEMPT_ENV}={attempt}".encode())
    if code != 0:
        tail = errors.decode("utf-8", "replace").strip().splitlines()
        raise DeliveryFailed(f"command exited with status {code}" + (f": {tail[-1]}" if tail else ""))


async def _feed(process: anyio.abc.Process, body: bytes) -> None:
    if process.stdin is None:
        return
    try:
        await process.stdin.send(body)
        await process.stdin.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the command did not read its input; its exit status decides


async def _drain(process: anyio.abc.Process, errors: bytearray) -> None:
    if process.stderr is None:
        return
    async for chunk in process.stderr:
        errors.extend(chunk)
        del errors[:-STDERR_TAIL]


def _stop(process: anyio.abc.Process, *, posix: bool) -> None:
    """Kill the command and everything it started (its process group), if still there."""
    try:
        if posix:
            # The shell and everything it started share the process group, which outlives
            # the shell while any of them runs (and its id is not reused meanwhile).
            os.killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass  # nothing of the group is left


def _kill_marked(mark: bytes) -> None:
    """Kill every process whose environment holds ``mark`` (the attempt's processes that
    left its group), sweeping until a sweep finds none."""
    if not Path(PROC).is_dir():
        return
    for _ in range(SWEEPS):
        if not _sweep(mark + b"\0"):
            return


def _sweep(mark: bytes) -> bool:
    """One pass over /proc; True when it killed something."""
    killed = False
    for entry in Path(PROC).iterdir():
        if not entry.name.isdigit():
            continue
        try:
            held = (b"\0" + (entry / "environ").read_bytes()).find(b"\0" + mark) >= 0
            if held:
                os.kill(int(entry.name), signal.SIGKILL)
                killed = True
        except OSError:
            continue  # gone, or another user's process (never ours to read or kill)
    return killed


async def _post_detached(url: str, body: bytes, limit_seconds: float) -> None:
    """``_post`` in a daemon thread of its own, awaited on the loop.

    An attempt cut short (its timeout, a CLI command that ends) abandons the POST, which
    goes on until its socket times out. In a worker thread of the loop it kept the process
    from exiting until then: a CLI command waited up to ``timeout_seconds`` for a webhook
    that never answers. A daemon thread ends with the process.
    """
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    failures: list[BaseException] = []

    def post() -> None:
        try:
            _post(url, body, limit_seconds)
        except BaseException as exc:  # noqa: BLE001 (handed to the waiting task, raised there)
            failures.append(exc)
        # The loop may have ended: then nobody waits for this POST any more.
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=post, name="webhook POST", daemon=True).start()
    await done.wait()
    if failures:
        raise failures[0]


def _post(url: str, body: bytes, timeout: float) -> None:
    """POST ``body`` (blocking; runs in a daemon thread). Imported late: urllib.request pulls in
    http.client, email and ssl, which a server that never sends a webhook should not load."""
    import http.client  # noqa: PLC0415
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(  # noqa: S310 (the config model admits only http(s) URLs)
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": f"mcp-server-escalation/{__version__}",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            response.read(65536)
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()  # it holds the response (and its socket)
        raise DeliveryFailed(f"HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            # The socket's own timeout and the caller's limit are the same number of seconds,
            # and either may end the wait first: the operator reads the same words for both.
            raise DeliveryFailed(f"no answer within {timeout:g} s") from exc
        raise DeliveryFailed(f"POST failed: {reason}") from exc
    if not 200 <= status < 300:
        raise DeliveryFailed(f"HTTP {status}")
