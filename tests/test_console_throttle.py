"""The console's login limit: wrong tokens per client address, on a clock the test moves."""

from __future__ import annotations

from mcp_server_escalation.adapters.console.throttle import (
    ADDRESSES_MAX,
    FAILURES_ALLOWED,
    LOCKOUT_SECONDS,
    WINDOW_SECONDS,
    LoginThrottle,
)


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_five_wrong_tokens_within_a_minute_lock_the_address_out_for_the_lockout() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(FAILURES_ALLOWED - 1):
        throttle.failed("10.0.0.1")
        assert throttle.retry_after("10.0.0.1") is None
    throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == LOCKOUT_SECONDS
    assert throttle.retry_after("10.0.0.2") is None  # another address is not held back
    clock.now += LOCKOUT_SECONDS - 0.5
    assert throttle.retry_after("10.0.0.1") == 1
    clock.now += 0.5
    assert throttle.retry_after("10.0.0.1") is None


def test_wrong_tokens_spread_beyond_the_window_never_lock_the_address() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(3 * FAILURES_ALLOWED):
        throttle.failed("10.0.0.1")
        clock.now += WINDOW_SECONDS / (FAILURES_ALLOWED - 1)
    assert throttle.retry_after("10.0.0.1") is None


def test_the_right_token_clears_the_addresses_wrong_ones() -> None:
    throttle = LoginThrottle(Clock())
    for _ in range(FAILURES_ALLOWED - 1):
        throttle.failed("10.0.0.1")
    throttle.succeeded("10.0.0.1")
    throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") is None


def test_the_addresses_held_are_bounded_and_the_one_touched_longest_ago_goes_first() -> None:
    throttle = LoginThrottle(Clock())
    for _ in range(FAILURES_ALLOWED):
        throttle.failed("first")
    for n in range(ADDRESSES_MAX - 1):
        throttle.failed(f"10.1.{n // 256}.{n % 256}")
    throttle.failed("first")  # touched again: now the newest, "10.1.0.0" the oldest
    throttle.failed("10.2.0.0")
    assert len(throttle) == ADDRESSES_MAX
    assert throttle.retry_after("first") is not None  # still held
    for n in range(1, ADDRESSES_MAX):
        throttle.failed(f"10.2.{n // 256}.{n % 256}")
    assert len(throttle) == ADDRESSES_MAX
    assert throttle.retry_after("first") is None  # forgotten once a thousand others came after it
