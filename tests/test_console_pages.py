"""The console's HTML rendering: evidence for a human, and nothing an agent wrote is ever markup."""

from __future__ import annotations

from pathlib import Path

from mcp_server_escalation.adapters.console.pages import (
    Safe,
    age,
    answer_time_chart,
    facts,
    fill,
    pass_rate_chart,
)
from mcp_server_escalation.prompts import PromptBook

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


def test_occurrences_render_as_a_table_with_file_and_line_together() -> None:
    html = facts(
        [
            {"message": "TypeError", "file": "src/app.py", "line": 42, "attempted_action": "added a guard"},
            {"message": "TypeError", "file": "src/app.py", "line": None, "attempted_action": None},
        ]
    )
    assert "<th>file:line</th>" in html
    assert "<td>src/app.py:42</td>" in html
    assert "<td>src/app.py</td>" in html
    assert "<th>attempted action</th>" in html
    assert "<th>line</th>" not in html


def test_keys_and_values_an_agent_wrote_are_escaped_at_every_depth() -> None:
    hostile = '<img src=x onerror="alert(1)">'
    html = facts({hostile: [{hostile: {"deep": [hostile]}}], "plain": hostile})
    assert "<img" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_a_template_escapes_every_value_but_the_fragments_it_was_given() -> None:
    book = PromptBook.load(PROMPTS)
    html = fill(book, "console_question", question="<b>why?</b>", options=Safe("<ol></ol>"))
    assert "&lt;b&gt;why?&lt;/b&gt;" in html
    assert "<ol></ol>" in html


def test_the_pass_rate_history_is_drawn_as_one_bar_per_run() -> None:
    chart = pass_rate_chart([{"pass_rate": 0.5}, {"pass_rate": 1.0}, {"pass_rate": 0.0}])
    assert chart.count("<rect") == 3
    assert "<title>100%</title>" in chart
    assert "<title>0%</title>" in chart
    assert pass_rate_chart([{"passed": 3}]) == ""


def test_age_is_said_in_its_largest_whole_unit() -> None:
    start = "2026-11-23T10:00:00.000Z"
    assert age(start, "2026-11-23T10:00:45.000Z") == "45s"
    assert age(start, "2026-11-23T10:12:59.000Z") == "12m"
    assert age(start, "2026-11-23T13:00:00.000Z") == "3h"
    assert age(start, "2026-11-25T10:00:00.000Z") == "2d"


def test_the_answer_times_are_drawn_as_one_labelled_bar_per_bucket_with_escaped_labels() -> None:
    chart = answer_time_chart(PromptBook.load(PROMPTS), [3, 0, 1, 0, 2])
    assert chart.count("<rect") == 5
    assert "(6 in all)" in chart
    assert "<title>≤ 5 min: 3</title>" in chart
    assert "<title>&gt; 4 h: 2</title>" in chart  # a label is text, never markup
    assert 'width="220"' in chart  # the most-filled bucket spans the full width
    assert 'width="0"' in chart  # an empty bucket has no bar
    assert "<script" not in chart
    assert "style=" not in chart
