"""Operator notifications that never lose an escalation, within 5 s of its creation
(benchmarks/README.md, notification and answer latency).

Design:
- **Durable first.** The announcement of a new escalation is written by a trigger in the
  same transaction that creates the escalation (migration 4), so a committed escalation
  always has one, whichever process or code path created it, and a process killed a
  microsecond later has lost nothing. A tool call pays one extra INSERT, nothing else:
  sending happens here, in the background.
- **Any process delivers.** Every server and CLI process with notifiers configured runs an
  ``Outbox``. It claims a due delivery in a write transaction (attempt counted, lease set to
  the timeout plus a margin), sends it outside any transaction, then records the outcome.
  A killed sender's lease runs out and the next process that opens the store sends again;
  a process that shuts down normally releases its claims at once. Delivery is therefore
  at-least-once: a sender killed after the notifier accepted but before the outcome was
  committed sends again.
- **Retries never end while someone is needed.** The rules (``rules/operators/notify.py``) decide what
  is due, the exponential backoff and re-notification, with ``now`` passed in.
- Everything is logged to stderr; nothing is ever raised into a tool call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import anyio

from ..clock import iso, parse_iso
from ..errors import StoreUnavailable
from ..models.escalations import Escalation
from ..models.reports import Delivery
from ..rules.operators.announce import notification_payload
from ..rules.operators.notify import is_due, next_check, renotify_at, renotify_due, retry_at
from ..settings import NotifyConfig
from ..store import escalations as escalation_store
from ..store import outbox as outbox_store
from ..store.sql import Conn
from .notifiers import DeliveryFailed, Notifier, send
from .runtime import Runtime

log = logging.getLogger(__name__)

# A claim outlives the send's own timeout by this much, so a live sender always finishes
# (or gives up) before anyone else may take the delivery over.
LEASE_MARGIN_SECONDS = 2.0
# How long the loop sleeps when nothing is due and nobody wakes it: the safety net for
# announcements written by other processes (a change-feed follower wakes it sooner).
IDLE_SECONDS = 5.0


@dataclass(frozen=True)
class Claim:
    """A delivery this process holds and is about to send."""

    notifier: Notifier
    delivery: Delivery
    escalation: Escalation


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to."""

    claim: Claim
    delivered: bool
    error: str | None


class Outbox:
    """Sends due announcements to this process's notifiers, retrying with backoff."""

    def __init__(
        self,
        rt: Runtime,
        notifiers: Sequence[Notifier],
        *,
        idle_seconds: float = IDLE_SECONDS,
        cut_short: str | None = None,
    ):
        # cut_short: the error recorded for an attempt this process cuts short (a CLI
        # command that ends); None hands it back at once (a server shutting down).
        self.rt = rt
        self.cut_short = cut_short
        self.notifiers = list(notifiers)
        self.idle_seconds = idle_seconds
        self.config: NotifyConfig = rt.settings.notify
        self._wake = anyio.Event()
        self._inflight: set[tuple[int, str]] = set()

    @property
    def lease_seconds(self) -> float:
        """How long a claim holds a delivery: the send's timeout plus a margin."""
        return float(self.config.timeout_seconds + LEASE_MARGIN_SECONDS)

    def wake(self) -> None:
        """Look for due deliveries now (a new escalation, a finished send)."""
        self._wake.set()

    async def deliver_due(self) -> list[Outcome]:
        """One complete pass: re-notify, claim what is due, send it all and wait for the outcomes."""
        claims, _ = await self._claim_due()
        outcomes: list[Outcome] = []

        async def one(claim: Claim) -> None:
            outcomes.append(await self._deliver(claim))

        async with anyio.create_task_group() as tg:
            for claim in claims:
                tg.start_soon(one, claim)
        return sorted(outcomes, key=lambda o: (o.claim.delivery.outbox_id, o.claim.notifier.key))

    async def run(self) -> None:
        """Deliver until cancelled: when woken, when a retry falls due, and every idle period.

        Sends run concurrently in the background, so one slow notifier never holds back the
        next escalation's announcement.
        """
        async with anyio.create_task_group() as senders:
            while True:
                self._wake = anyio.Event()
                next_at = await self._pass(senders.start_soon)
                delay = self.idle_seconds
                if next_at is not None:
                    delay = min(delay, max(0.0, (next_at - self.rt.clock()).total_seconds()))
                with anyio.move_on_after(delay):
                    await self._wake.wait()

    async def _pass(self, spawn: Callable[..., Any]) -> datetime | None:
        # The top of a background loop: a failing pass (disk full, a store locked for
        # minutes) is logged and retried later; it must never take the server down.
        try:
            claims, next_at = await self._claim_due()
        except StoreUnavailable:
            return None  # the store logs its outage once; the pass runs again
        except Exception:
            log.exception("notification outbox: pass failed; retrying in %.0f s", self.idle_seconds)
            return None
        for claim in claims:
            spawn(self._deliver_in_background, claim)
        return next_at

    async def _deliver_in_background(self, claim: Claim) -> None:
        # The top of a background task, as above: log, never propagate into the server.
        try:
            await self._deliver(claim)
        except Exception:
            log.exception(
                "escalation %d: delivery to %s crashed", claim.delivery.escalation_id, claim.notifier.key
            )
        self.wake()

    async def _claim_due(self) -> tuple[list[Claim], datetime | None]:
        now = self.rt.clock()
        minutes = self.config.renotify_minutes
        times: list[datetime] = []
        if minutes > 0:
            newest = await self.rt.db.read(outbox_store.newest_announcements)
            if any(renotify_due(parse_iso(at), now, minutes) for _, at in newest):
                newest = await self.rt.db.write(lambda conn: self._renotify(conn, now))
            times.extend(t for _, at in newest if (t := renotify_at(parse_iso(at), minutes)))
        seen = await self.rt.db.read(self._current)
        times.extend(t for d in seen if not self._due(d, now) and (t := next_check(d)))
        next_at = min(times) if times else None
        if not any(self._due(d, now) for d in seen):
            return [], next_at
        claims = await self.rt.db.write(lambda conn: self._claim(conn, now))
        # Marked in flight only once the claims are committed (a rolled-back claim is no claim).
        self._inflight.update((c.delivery.outbox_id, c.notifier.key) for c in claims)
        return claims, next_at

    def _current(self, conn: Conn) -> list[Delivery]:
        return [d for n in self.notifiers for d in outbox_store.current(conn, n.key)]

    def _due(self, delivery: Delivery, now: datetime) -> bool:
        return (delivery.outbox_id, delivery.notifier) not in self._inflight and is_due(delivery, now)

    def _renotify(self, conn: Conn, now: datetime) -> list[tuple[int, str]]:
        # Checked again inside the write transaction: another process may have just done it.
        for escalation_id, newest in outbox_store.newest_announcements(conn):
            if renotify_due(parse_iso(newest), now, self.config.renotify_minutes):
                outbox_store.announce(conn, escalation_id, "renotify", iso(now))
                log.info(
                    "escalation %d still pending %g min after its last announcement: re-notifying",
                    escalation_id,
                    self.config.renotify_minutes,
                )
        return outbox_store.newest_announcements(conn)

    def _claim(self, conn: Conn, now: datetime) -> list[Claim]:
        lease_until = iso(now + timedelta(seconds=self.lease_seconds))
        claims: list[Claim] = []
        for notifier in self.notifiers:
            for delivery in outbox_store.current(conn, notifier.key):
                if not self._due(delivery, now):
                    continue
                escalation = escalation_store.get(conn, delivery.escalation_id)
                if escalation is None:  # pragma: no cover (escalations are never deleted)
                    continue
                if not outbox_store.claim(
                    conn, delivery, notifier.key, now=iso(now), lease_until=lease_until
                ):
                    continue  # another server claimed it since it was read: it sends it
                claimed = delivery.model_copy(
                    update={"attempts": delivery.attempts + 1, "lease_until": lease_until}
                )
                claims.append(Claim(notifier, claimed, escalation))
        return claims

    async def _deliver(self, claim: Claim) -> Outcome:
        delivery, notifier = claim.delivery, claim.notifier
        started = anyio.current_time()
        try:
            payload = notification_payload(
                self.rt.prompts,
                claim.escalation,
                delivery.event,
                self.rt.clock(),
                console_url=self.rt.settings.elicitation.console_url,
            )
            await send(notifier, payload, self.config.timeout_seconds)
        except DeliveryFailed as exc:
            return await self._failed(claim, str(exc))
        except BaseException:
            # Cancelled (the process is shutting down) or a bug: hand the delivery back at
            # once rather than making the next process wait for the lease to run out; or,
            # cut short by a CLI command, count a failed attempt so the next one waits.
            with anyio.CancelScope(shield=True):
                if self.cut_short is not None:
                    await self._failed(claim, self.cut_short)
                else:
                    await self._release(claim)
            raise
        now = self.rt.now()
        await self.rt.db.write(
            lambda conn: outbox_store.mark_delivered(conn, delivery.outbox_id, notifier.key, now)
        )
        self._inflight.discard((delivery.outbox_id, notifier.key))
        log.info(
            "escalation %d (%s): delivered to %s on attempt %d in %.0f ms",
            delivery.escalation_id,
            delivery.event,
            notifier.key,
            delivery.attempts,
            (anyio.current_time() - started) * 1000,
        )
        return Outcome(claim, delivered=True, error=None)

    async def _release(self, claim: Claim) -> None:
        delivery, notifier = claim.delivery, claim.notifier
        now = self.rt.now()
        await self.rt.db.write(lambda conn: outbox_store.release(conn, delivery.outbox_id, notifier.key, now))
        self._inflight.discard((delivery.outbox_id, notifier.key))
        log.warning(
            "escalation %d (%s): delivery to %s interrupted on attempt %d; left for the next attempt",
            delivery.escalation_id,
            delivery.event,
            notifier.key,
            delivery.attempts,
        )

    async def _failed(self, claim: Claim, error: str) -> Outcome:
        delivery, notifier = claim.delivery, claim.notifier
        now = self.rt.clock()
        retry = retry_at(now, delivery.attempts, self.config.retry_seconds, self.config.retry_max_seconds)
        await self.rt.db.write(
            lambda conn: outbox_store.mark_failed(
                conn, delivery.outbox_id, notifier.key, error=error, next_attempt_at=iso(retry), now=iso(now)
            )
        )
        self._inflight.discard((delivery.outbox_id, notifier.key))
        log.warning(
            "escalation %d (%s): delivery to %s failed on attempt %d: %s; next attempt at %s",
            delivery.escalation_id,
            delivery.event,
            notifier.key,
            delivery.attempts,
            error,
            iso(retry),
        )
        return Outcome(claim, delivered=False, error=error)
