"""When to send, retry and re-send operator notifications: pure functions of state and ``now``.

- An announcement is **due** for a notifier when that notifier never tried it, or when its
  last attempt failed and the retry time has come, unless another process holds a lease on
  it (it is sending right now) or it was delivered.
- A failed attempt is retried after ``base * 2 ** (attempts - 1)`` seconds, capped at
  ``cap``: 5, 10, 20, 40 s ... up to 5 minutes with the defaults. There is no last attempt:
  an announcement is retried until it is delivered, the escalation stops being pending, or a
  re-notification supersedes it. Nothing is dropped because a chat service was down.
- A pending escalation is **re-notified** once ``renotify_minutes`` have passed since its
  newest announcement (0 turns re-notification off).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from ...clock import parse_iso
from ...models.reports import Delivery


def notifier_key(kind: str, target: str) -> str:
    """A stable name for a configured notifier: its kind and a digest of its target.

    The digest keeps a webhook's secret path out of the store and lets two processes
    configured alike share one delivery record.
    """
    digest = hashlib.sha256(target.encode("utf-8")).hexdigest()[:12]
    return f"{kind}:{digest}"


def is_due(delivery: Delivery, now: datetime) -> bool:
    """Should this notifier try this announcement now?"""
    if delivery.delivered_at is not None:
        return False
    if delivery.lease_until is not None and parse_iso(delivery.lease_until) > now:
        return False
    if delivery.attempts == 0 or delivery.next_attempt_at is None:
        return True
    return parse_iso(delivery.next_attempt_at) <= now


def next_check(delivery: Delivery) -> datetime | None:
    """When an undelivered announcement that is not due now becomes due."""
    if delivery.delivered_at is not None:
        return None
    times = [parse_iso(t) for t in (delivery.lease_until, delivery.next_attempt_at) if t is not None]
    return max(times) if times else None


def retry_delay(attempts: int, base_seconds: float, cap_seconds: float) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt (exponential, capped)."""
    exponent = min(max(attempts - 1, 0), 32)
    return float(min(cap_seconds, base_seconds * 2**exponent))


def retry_at(now: datetime, attempts: int, base_seconds: float, cap_seconds: float) -> datetime:
    """The time of the next attempt after the ``attempts``-th failure."""
    return now + timedelta(seconds=retry_delay(attempts, base_seconds, cap_seconds))


def renotify_due(newest_announcement_at: datetime, now: datetime, renotify_minutes: float) -> bool:
    """Has a pending escalation gone ``renotify_minutes`` without an announcement?"""
    if renotify_minutes <= 0:
        return False
    return now - newest_announcement_at >= timedelta(minutes=renotify_minutes)


def renotify_at(newest_announcement_at: datetime, renotify_minutes: float) -> datetime | None:
    """When the next re-notification of a pending escalation falls due."""
    if renotify_minutes <= 0:
        return None
    return newest_announcement_at + timedelta(minutes=renotify_minutes)
