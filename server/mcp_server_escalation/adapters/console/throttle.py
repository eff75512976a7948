"""How often one client address may get the login wrong.

The operator token is long and random, so guessing it is hopeless; the limit is there so a
script cannot try at the speed of the network and fill the log, not to make a weak token
safe. After ``FAILURES_ALLOWED`` wrong tokens from one address within ``WINDOW_SECONDS``,
every login from that address, the right token too, is refused with 429 for
``LOCKOUT_SECONDS`` (answering the right token would tell a guesser it had found it). The
addresses live in this process's memory, at most ``ADDRESSES_MAX`` of them: the one touched
longest ago is forgotten first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

FAILURES_ALLOWED = 5
WINDOW_SECONDS = 60.0
LOCKOUT_SECONDS = 300.0
ADDRESSES_MAX = 1024


@dataclass
class _Attempts:
    """One address's recent wrong tokens and, once it has too many, when it may try again."""

    failures: list[float] = field(default_factory=list)
    locked_until: float = 0.0


class LoginThrottle:
    """Wrong logins per client address, on a monotonic clock (a test gives its own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._attempts: dict[str, _Attempts] = {}

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until ``address`` may log in again, or None when it may now."""
        attempts = self._attempts.get(address)
        if attempts is None:
            return None
        left = attempts.locked_until - self._clock()
        return math.ceil(left) if left > 0 else None

    def failed(self, address: str) -> None:
        """Count one wrong token; the one too many locks the address out."""
        now = self._clock()
        attempts = self._attempts.pop(address, None) or _Attempts()
        attempts.failures = [at for at in attempts.failures if now - at < WINDOW_SECONDS] + [now]
        if len(attempts.failures) >= FAILURES_ALLOWED:
            attempts.locked_until = now + LOCKOUT_SECONDS
            attempts.failures = []
        while len(self._attempts) >= ADDRESSES_MAX:
            del self._attempts[next(iter(self._attempts))]
        self._attempts[address] = attempts  # last in the order: forgotten last

    def succeeded(self, address: str) -> None:
        """The right token: the address starts afresh."""
        self._attempts.pop(address, None)

    def __len__(self) -> int:
        return len(self._attempts)
