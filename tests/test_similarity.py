"""The fixed, deterministic similarity behind stagnation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server_escalation.rules.decide.similarity import similar_run, similarity


def test_volatile_parts_do_not_make_texts_different() -> None:
    assert similarity("expected 3, got 4 at /tmp/a/x.py:12", "expected 5, got 6 at /tmp/b/x.py:99") == 1.0


def test_different_complaints_are_not_similar() -> None:
    assert similarity("syntax error in parser", "timeout contacting database") < 0.2


def test_similarity_is_the_jaccard_index_of_word_sets() -> None:
    # {a, b, c} vs {a, b, d}: 2 shared of 4 distinct
    assert similarity("a b c", "a b d") == 0.5


@pytest.mark.parametrize(
    ("texts", "patience", "expected"),
    [
        (["x y z", "x y z", "x y z"], 3, 3),
        (["x y z", "x y z"], 3, 0),
        (["other thing", "x y z", "x y z", "x y z"], 3, 3),
        (["x y z", "x y z", "x y z", "x y z"], 3, 4),
        (["x y z", "q r s", "x y z"], 2, 0),
    ],
)
def test_the_similar_run_is_counted_from_the_newest(texts: list[str], patience: int, expected: int) -> None:
    assert similar_run(texts, patience, 0.7) == expected


@given(st.text(max_size=200), st.text(max_size=200))
def test_similarity_is_symmetric_bounded_and_deterministic(a: str, b: str) -> None:
    value = similarity(a, b)
    assert value == similarity(b, a) == similarity(a, b)
    assert 0.0 <= value <= 1.0
    assert similarity(a, a) == 1.0
