"""The two operator notifiers of the ``[notify]`` table, and how each one sends.

- ``command``: a shell command; the announcement's JSON goes to its stdin and a few facts
  go to its environment (``ESCALATION_ID``, ``ESCALATION_EVENT``, ``ESCALATION_TYPE``,
  ``ESCALATION_PRIORITY``, ``ESCALATION_TASK_ID``, ``ESCALATION_TEXT``) for one-liners such
  as ``notify-send "$ESCALATION_TEXT"``. Exit status 0 is a delivery. Its stdout is
  discarded (a stdio server's stdout belongs to the protocol); the tail of its stderr
  becomes the recorded error. It runs in its own process group, killed as a whole when
  the attempt ends: at its exit, on timeout or when cancelled. Whatever it starts ends
  with it, also a process that leaves the group (``setsid``, a daemon forking twice, with
  its environment emptied by ``env -i``): the command runs under ``reaper.py``, a bare
  interpreter that makes itself a child subreaper (Linux), so every orphan of the command
  is handed to it, and kills them all when the command exits or the attempt ends. Where
  the kernel has no subreaper, the process group alone is killed (``reaper.py`` says so on
  stderr).
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
from ..rules.operators.announce import payload_body
from ..rules.operators.notify import notifier_key
from ..settings import NotifyConfig

STDERR_TAIL = 2000
# After the command exits, how long its stderr may take to reach us: only what it wrote
# before exiting is still in the pipe (its group is killed at the exit).
STDERR_GRACE_SECONDS = 1.0


# The script each command runs under (the standard library alone: run by path, isolated).
REAPER = Path(__file__).with_name("reaper.py")
# At the attempt's end, how long the reaper gets to end what the command started before its
# group is killed (it then kills what is left of the group; orphans outside it would stay).
REAPER_GRACE_SECONDS = 5.0


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
    process = await anyio.open_process(
        # the user's shell command line, as written in their own config, under the reaper
        [sys.executable, "-I", str(REAPER), command],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=posix,
    )
    errors = bytearray()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_feed, process, body)
            tg.start_soon(_drain, process, errors)
            code = await process.wait()
            # The command's exit ends the attempt: the reaper has ended whatever it started
            # (a child left in the background held stderr open, so the attempt waited for it
            # until its timeout, and each retry left one more), and what the command wrote to
            # stderr before it exited is read within a moment.
            _stop(process, posix=posix)
            tg.cancel_scope.deadline = anyio.current_time() + STDERR_GRACE_SECONDS
    finally:
        # A timeout or a cancellation ends the attempt too: the reaper is told to end the
        # command and all it started, then the group is killed.
        with anyio.CancelScope(shield=True):
            await _ended(process, posix=posix)
            await process.aclose()
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


async def _ended(process: anyio.abc.Process, *, posix: bool) -> None:
    """The reaper asked to stop (SIGTERM: it ends the command and all it started) and given
    ``REAPER_GRACE_SECONDS`` to; then its group is killed, whatever is left of it."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        with anyio.move_on_after(REAPER_GRACE_SECONDS):
            await process.wait()
    _stop(process, posix=posix)
    if process.returncode is None:
        await process.wait()


def _stop(process: anyio.abc.Process, *, posix: bool) -> None:
    """Kill the reaper's process group (the command's, unless it left), if still there."""
    try:
        if posix:
            # The reaper, the shell and everything they started share the process group,
            # which outlives them while any of them runs (its id is not reused meanwhile).
            os.killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass  # nothing of the group is left


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
