"""Time as the store writes it: fixed-width ISO 8601 UTC text that sorts as it should."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from mcp_server_escalation.clock import iso, parse_iso

ZONES = [UTC, timezone(timedelta(hours=-11)), timezone(timedelta(hours=5, minutes=30))]
MOMENTS = st.datetimes(
    min_value=datetime(1970, 1, 2),  # bounds are naive; each moment gets a zone below
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from(ZONES),
)


@given(MOMENTS)
def test_iso_is_utc_with_milliseconds_and_parses_back(moment: datetime) -> None:
    text = iso(moment)
    utc = moment.astimezone(UTC)
    assert text == utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    assert parse_iso(text) == utc.replace(microsecond=utc.microsecond // 1000 * 1000)


@given(MOMENTS, MOMENTS)
def test_iso_text_sorts_as_the_moments_do(a: datetime, b: datetime) -> None:
    if iso(a) != iso(b):
        assert (iso(a) < iso(b)) == (a < b)
