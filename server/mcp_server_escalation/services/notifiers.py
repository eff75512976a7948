"""The two operator notifiers of the ``[notify]`` table, and how each one sends.

- ``command``: a shell command; the announcement's JSON goes to its stdin and a few facts
  go to its environment (``ESCALATION_ID``, ``ESCALATION_EVENT``, ``ESCALATION_TYPE``,
  ``ESCALATION_PRIORITY``, ``ESCALATION_TASK_ID``, ``ESCALATION_TEXT``) for one-liners such
  as ``notify-send "$ESCALATION_TEXT"``. Exit status 0 is a delivery. Its stdout is
  discarded (a stdio server's stdout belongs to the protocol); the tail of its stderr
  becomes the recorded error. It runs in its own process group, killed as a whole on
  timeout.
- ``webhook_url``: an HTTP(S) POST of the same JSON (it carries a ``text`` summary, which
  chat webhooks display). Any 2xx status is a delivery. Sent with the standard library's
  ``urllib`` in a worker thread: no dependency beyond what the project already has.

Every call is bounded by ``timeout_seconds``; a failure raises ``DeliveryFailed`` with a
one-line reason that the outbox records and logs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.to_thread

from .. import __version__
from ..rules.announce import payload_body
from ..rules.notify import notifier_key
from ..settings import NotifyConfig

STDERR_TAIL = 2000


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
                await anyio.to_thread.run_sync(
                    _post, notifier.target, body, limit_seconds, abandon_on_cancel=True
                )
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
        command,  # a shell command line, as the user wrote it in their own config
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
    finally:
        if process.returncode is None:
            _kill(process, posix=posix)
            with anyio.CancelScope(shield=True):
                await process.wait()
        with anyio.CancelScope(shield=True):
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


def _kill(process: anyio.abc.Process, *, posix: bool) -> None:
    try:
        if posix:
            # The shell and everything it started share the process group.
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass


def _post(url: str, body: bytes, timeout: float) -> None:
    """POST ``body`` (blocking; runs in a worker thread). Imported late: urllib.request pulls in
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
