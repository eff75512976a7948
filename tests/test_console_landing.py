"""Where the console's login lands: the page asked for when it is this site's own, else the queue."""

from __future__ import annotations

import pytest

from mcp_server_escalation.adapters.console.landing import NEXT_MAX_CHARS, landing

OTHER_SITES = (
    "//evil.example",
    "//evil.example/escalations/1",
    "/\\evil.example",
    "/\\/evil.example",
    "https://evil.example",
    "http:evil.example",
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    "%2F%2Fevil.example",
    "/%2F/evil.example",
    "/%2fevil.example",
    "/%5Cevil.example",
    "/%252F%252Fevil.example",
    "/%25252F%25252Fevil.example",
    "///evil.example",
    " /escalations/1",
    "/escalations/1\r\nSet-Cookie: taken=1",
    "/escalations/1\x00",
    "/escalations/%0d%0aSet-Cookie:%20taken=1",
    "/escalations/1\x7f",
    "/tâches/1",
    "escalations/1",
    "",
)


@pytest.mark.parametrize("requested", OTHER_SITES)
def test_anything_but_a_plain_path_of_this_site_lands_on_the_queue(requested: str) -> None:
    assert landing(requested) == "/"


@pytest.mark.parametrize(
    "requested",
    ["/escalations/12", "/tasks/fix%20the%20parser", "/?project=web&agent=ann", "/answered", "/stats"],
)
def test_a_console_page_asked_for_before_the_login_is_where_the_login_lands(requested: str) -> None:
    assert landing(requested) == requested


def test_the_login_and_the_event_stream_are_never_landed_on() -> None:
    assert landing("/login") == "/"
    assert landing("/login?next=/escalations/1") == "/"
    assert landing("/logout") == "/"
    assert landing("/events") == "/"


def test_a_path_longer_than_the_limit_lands_on_the_queue() -> None:
    longest = "/escalations/1?project=" + "p" * (NEXT_MAX_CHARS - len("/escalations/1?project="))
    assert landing(longest) == longest
    assert landing(longest + "p") == "/"
