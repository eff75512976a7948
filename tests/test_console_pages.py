"""The console's templates: every value escaped by default, a missing name an error, the
store's values in words, dates as a person reads them."""

from __future__ import annotations

import jinja2
import pytest

from mcp_server_escalation.adapters.console.rendering import ago, environment, exact, words

HOSTILE = '<img src=x onerror="alert(1)">'


def test_every_value_is_escaped_unless_a_template_says_otherwise() -> None:
    env = environment()
    template = "{% from 'macros.html' import facts %}<p>{{ text }}</p>{{ facts(record) }}"
    page = env.from_string(template).render(
        text=HOSTILE, record={HOSTILE: [{HOSTILE: {"deep": [HOSTILE]}}], "plain": HOSTILE}
    )
    assert "<img" not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page


def test_a_name_the_template_was_not_given_is_an_error_not_an_empty_string() -> None:
    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ missing }}").render()


def test_the_pass_rate_history_is_drawn_as_one_bar_per_run() -> None:
    chart = (
        environment()
        .from_string("{% from 'macros.html' import pass_rates %}{{ pass_rates(runs) }}")
        .render(runs=[{"pass_rate": 0.5}, {"pass_rate": 1.0}, {"pass_rate": 0.0}, {"pass_rate": None}])
    )
    assert chart.count("<rect") == 3
    assert "<title>run 2: 100%</title>" in chart
    assert "<title>run 3: 0%</title>" in chart


def test_stored_values_are_said_in_words() -> None:
    assert words(True) == "yes"
    assert words(False) == "no"
    assert words(None) == words([]) == words({}) == "(none)"
    assert words(["web/auth/**", "web/api/**"]) == "web/auth/**, web/api/**"
    assert words({"same_error_repeated": 3}) == "same error repeated 3"
    assert words("tool_calls") == "tool calls"
    assert words("src/module_21.py") == "src/module_21.py"  # a path is not a name


def test_dates_are_said_as_how_long_ago_with_the_exact_time_to_hover() -> None:
    start = "2026-11-23T10:00:00.000Z"
    assert ago(start, "2026-11-23T10:00:45.000Z") == "45 s ago"
    assert ago(start, "2026-11-23T10:12:59.000Z") == "12 min ago"
    assert ago(start, "2026-11-23T13:00:00.000Z") == "3 h ago"
    assert ago(start, "2026-11-25T10:00:00.000Z") == "2 d ago"
    assert exact(start) == "2026-11-23 10:00:00 UTC"
