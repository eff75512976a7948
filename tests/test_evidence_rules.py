"""The pure rules that keep an escalation's evidence bounded (rules/bounds/evidence.py)."""

from __future__ import annotations

from typing import Any

from mcp_server_escalation.rules.bounds.evidence import (
    FIRING_SHOWN,
    LATEST_SHOWN,
    TEXT_SHOWN,
    clip,
    clip_texts,
    fired_run,
    refreshed_run,
    scope_named,
    scope_shown,
)


def items(first: int, last: int) -> list[dict[str, Any]]:
    """Occurrences numbered ``first``..``last``, oldest first, as a store read returns them."""
    return [{"n": n} for n in range(first, last + 1)]


def numbers(shown: list[dict[str, Any]]) -> list[int]:
    return [item["n"] for item in shown]


def test_a_short_text_is_kept_whole() -> None:
    assert clip("KeyError: 'next_url'") == "KeyError: 'next_url'"


def test_a_long_text_keeps_its_head_and_its_tail_and_says_how_much_is_left_out() -> None:
    text = "Traceback (most recent call last):\n" + "  frame\n" * 500 + "KeyError: 'next_url'"
    clipped = clip(text)
    assert clipped.startswith("Traceback (most recent call last):")
    assert clipped.endswith("KeyError: 'next_url'")
    assert len(clipped) < TEXT_SHOWN + 40
    kept = TEXT_SHOWN
    assert f"[…{len(text) - kept} characters omitted…]" in clipped


def test_texts_are_clipped_at_any_depth_and_nothing_else_changes() -> None:
    value = {"message": "x" * 5000, "line": 7, "details": {"stderr": ["y" * 5000, None]}}
    clipped = clip_texts(value)
    assert len(clipped["message"]) < TEXT_SHOWN + 40
    assert len(clipped["details"]["stderr"][0]) < TEXT_SHOWN + 40
    assert (clipped["line"], clipped["details"]["stderr"][1]) == (7, None)


def test_a_run_that_fires_shows_the_items_that_fired_it() -> None:
    run = fired_run(items(1, 3), 3)
    assert numbers(run["at_firing"]) == [1, 2, 3]
    assert (run["count"], run["count_at_firing"], run["latest"], run["omitted"]) == (3, 3, [], 0)


def test_a_run_longer_than_what_is_shown_when_it_fires_counts_what_it_leaves_out() -> None:
    run = fired_run(items(46, 50), 50)
    assert numbers(run["at_firing"]) == list(range(51 - FIRING_SHOWN, 51))
    assert run["omitted"] == 50 - FIRING_SHOWN


def test_each_refresh_keeps_what_fired_the_trigger_and_the_latest_few() -> None:
    run = fired_run(items(1, 3), 3)
    for count in range(4, 1001):
        run = refreshed_run(run, items(max(1, count - 4), count), count)
        assert numbers(run["at_firing"]) == [1, 2, 3]
        shown = min(LATEST_SHOWN, count - 3)
        assert numbers(run["latest"]) == list(range(count - shown + 1, count + 1))
        assert run["omitted"] == count - 3 - shown
    assert run["count"] == 1000


def test_a_count_that_did_not_grow_is_a_new_run_with_its_own_firing() -> None:
    old = refreshed_run(fired_run(items(1, 3), 3), items(1, 4), 4)
    restarted = refreshed_run(old, items(11, 13), 3)
    assert numbers(restarted["at_firing"]) == [11, 12, 13]
    assert (restarted["count"], restarted["latest"], restarted["omitted"]) == (3, [], 0)


def test_the_items_of_a_run_are_clipped() -> None:
    run = fired_run([{"message": "m" * 5000}], 1)
    assert len(run["at_firing"][0]["message"]) < TEXT_SHOWN + 40


def test_an_occurrence_repeating_the_message_before_it_shows_it_once() -> None:
    same = "E       AssertionError: assert 107.0 == 107.5"
    shown = fired_run(
        [
            {"line": 10, "message": same},
            {"line": 11, "message": same},
            {"line": 12, "message": "E       AssertionError: assert 107.0 == 108.0"},
            {"line": 13, "message": "E       AssertionError: assert 107.0 == 108.0"},
        ],
        4,
    )["at_firing"]
    assert shown == [
        {"line": 10, "message": same},
        {"line": 11},
        {"line": 12, "message": "E       AssertionError: assert 107.0 == 108.0"},
        {"line": 13},
    ]


def test_a_short_scope_is_named_whole_and_a_long_one_by_its_first_globs_and_a_count() -> None:
    assert scope_named(["src/**", "tests/**"]) == ["src/**", "tests/**"]
    long = [f"src/m{n}/**" for n in range(500)]
    assert scope_named(long) == [*long[:5], "(+495 more)"]
    assert scope_shown(long) == long[:20]
    assert len(scope_shown(["s" * 4000])[0]) < 200
