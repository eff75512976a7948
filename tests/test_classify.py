"""Blocker classification by the documented patterns of data/failure_patterns.toml."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server_escalation.datafiles import pattern_book
from mcp_server_escalation.rules import literals
from mcp_server_escalation.rules.classify import Pattern, PatternBook, classify
from mcp_server_escalation.rules.literals import fold, parse_tree, required_texts


@pytest.mark.parametrize(
    ("message", "signal_type", "details"),
    [
        ("ModuleNotFoundError: No module named 'requests'", "missing_dependency", {"dependency": "requests"}),
        ("Error: Cannot find module 'lodash'", "missing_dependency", {"dependency": "lodash"}),
        (
            "ERROR: No matching distribution found for numpy==9.9.9",
            "missing_dependency",
            {"dependency": "numpy", "version": "9.9.9"},
        ),
        (
            "npm ERR! notarget No matching version found for lodash@4.17.21",
            "missing_dependency",
            {"dependency": "lodash", "version": "4.17.21"},
        ),
        (
            "missing dependency: lodash@4.17.21",
            "missing_dependency",
            {"dependency": "lodash", "version": "4.17.21"},
        ),
        ("bash: rg: command not found", "missing_dependency", {"dependency": "rg"}),
        (
            "PermissionError: [Errno 13] Permission denied: '/etc/secrets/api-key'",
            "permission_denied",
            {"resource": "/etc/secrets/api-key"},
        ),
        (
            "Error: EACCES: permission denied, open '/etc/secrets/api-key'",
            "permission_denied",
            {"resource": "/etc/secrets/api-key", "operation": "open"},
        ),
        ("cat: /root/x: Permission denied", "permission_denied", {}),
        ("HTTP 403 Forbidden", "permission_denied", {"status_code": 403}),
        (
            "GET https://api.github.com/repos failed: HTTP 503 Service Unavailable",
            "api_unavailable",
            {"status_code": 503, "endpoint": "https://api.github.com/repos"},
        ),
        ("upstream returned 502 Bad Gateway", "api_unavailable", {"status_code": 502}),
        ("connect ECONNREFUSED 127.0.0.1:5432", "api_unavailable", {}),
        ("requests.exceptions.ReadTimeout: read timed out", "network_transient", {}),
        ("socket hang up: ECONNRESET", "network_transient", {}),
        ("AssertionError: expected 3 but got 4", "test_failure", {}),
        ("SyntaxError: invalid syntax", "build_error", {}),
        ("TypeError: undefined is not a function", "runtime_error", {}),
        # Read on real runs of agents: none of these is a blocker or a network error.
        ("C0114: Missing module docstring (missing-module-docstring)", "runtime_error", {}),
        (
            '  File "/lib/python3.6/site-packages/asgiref/timeout.py", line 66, in __aexit__',
            "runtime_error",
            {},
        ),
        (
            "python3: No module named pkg.__main__; 'pkg' is a package and cannot be directly executed",
            "runtime_error",
            {},
        ),
        ("ERROR:\nInvalid `path` parameter: /w/a.py. File already exists at: /w/a.py.", "tool_refusal", {}),
        ("String to replace not found in file.", "tool_refusal", {}),
        (
            "ERROR:\nNo replacement was performed, old_str `timeout = 3` did not appear verbatim",
            "tool_refusal",
            {},
        ),
    ],
)
def test_messages_are_classified_by_documented_patterns(
    message: str, signal_type: str, details: dict[str, object]
) -> None:
    chosen = classify(message, pattern_book())
    assert chosen.signal_type == signal_type
    for key, value in details.items():
        assert chosen.details.get(key) == value, (key, chosen.details)


def test_every_match_names_the_rule_that_chose_it() -> None:
    chosen = classify("Error: Cannot find module 'lodash'", pattern_book())
    assert chosen.rule == "node_cannot_find_module"


def test_unmatched_message_with_a_tool_name_is_a_tool_error() -> None:
    chosen = classify("something odd happened", pattern_book(), tool_name="Bash")
    assert (chosen.signal_type, chosen.rule) == ("tool_error", "default_with_tool_name")


def test_error_type_takes_part_in_classification() -> None:
    chosen = classify("No module named 'yaml'", pattern_book(), error_type="ModuleNotFoundError")
    assert chosen.signal_type == "missing_dependency"
    assert chosen.details["dependency"] == "yaml"


def test_every_pattern_classifies_its_own_documented_example() -> None:
    # An earlier pattern that steals a later one's example, or a regex typo, fails here.
    book = pattern_book()
    assert len({p.name for p in book.patterns}) == len(book.patterns)
    for pattern in book.patterns:
        chosen = classify(pattern.example, book)
        assert (chosen.rule, chosen.signal_type) == (pattern.name, pattern.signal_type)


def test_the_three_blocker_classes_and_transients_are_covered() -> None:
    assert {p.signal_type for p in pattern_book().patterns} >= {
        "missing_dependency",
        "permission_denied",
        "api_unavailable",
        "network_transient",
    }


# --- the texts a pattern's matches need (rules.literals) ---------------------------------------


def test_fold_maps_every_character_ignorecase_matches_with_an_ascii_letter_to_that_letter() -> None:
    letter = re.compile("[a-z]", re.IGNORECASE)
    folded_to_other = []
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if 0xD800 <= code <= 0xDFFF or not letter.fullmatch(ch):
            continue
        if not (len(fold(ch)) == 1 and re.fullmatch(fold(ch), ch, re.IGNORECASE)):
            folded_to_other.append(hex(code))
    assert folded_to_other == []


@pytest.mark.parametrize(
    ("regex", "needs"),
    [
        ("timed out", {"timed out"}),
        ("(?:ECONNRESET|broken pipe)", {"econnreset", "broken pipe"}),
        (r"\bFAILED\b|\d+ failed", {"failed", " failed"}),
        (r"HTTP[\s:]*(?P<code>401|403)", {"http"}),
        ("(?:a|b)+c", {"c"}),  # the letters joined into a class: only "c" is known
        ("(?:x)?yz", {"yz"}),  # an optional group needs nothing
        ("[0-9]+", None),
        ("(?:abc|[0-9])", None),  # a branch without a text: the alternation needs nothing
        ("caf\u00e9", {"caf"}),  # non-ASCII characters end a run
        ("(?=abc)x", {"x"}),  # a lookahead holds no text of the match
    ],
)
def test_required_texts_are_read_off_what_every_match_holds(regex: str, needs: set[str] | None) -> None:
    found = required_texts(re.compile(regex, re.IGNORECASE))
    assert (set(found) if found is not None else None) == needs


def _reference_classify(text: str) -> str:
    """The first pattern that matches, searching every one (no required texts)."""
    for pattern in pattern_book().patterns:
        if pattern.regex.search(text):
            return pattern.name
    return "default"


# Pieces of the patterns' own texts in random case, the characters re.IGNORECASE folds
# onto letters, and noise: texts that come close to matching, or match by a folded letter.
_PIECES = st.sampled_from(
    sorted({n for p in pattern_book().patterns for n in p.needs or ()})
    + [p.example for p in pattern_book().patterns]
    + ["\u0130", "\u0131", "\u017f", "\u212a", "E", "rror", ":", "'", " ", "404", "503", "x", "\n"]
)


@given(st.lists(st.tuples(_PIECES, st.booleans()), max_size=6))
@settings(max_examples=400, deadline=None)
def test_classification_with_required_texts_is_classification_without(pieces: list[tuple[str, bool]]) -> None:
    text = "".join(piece.upper() if shout else piece for piece, shout in pieces)
    for pattern in pattern_book().patterns:
        if pattern.regex.search(text):
            assert pattern.needs is None or any(needle in fold(text) for needle in pattern.needs)
    classify.cache_clear()
    assert classify(text, pattern_book()).rule == _reference_classify(text)


def test_the_parser_re_compiles_with_reads_a_pattern_as_the_required_texts_expect() -> None:
    # CPython keeps re._parser private: a release that moves or reshapes it fails here.
    tree = parse_tree(re.compile("ab(?:cd|e)+", re.IGNORECASE))
    assert tree is not None
    assert [str(op) for op, _ in tree] == ["LITERAL", "LITERAL", "MAX_REPEAT"]
    assert [arg for _, arg in tree[:2]] == [ord("a"), ord("b")]
    low, _high, repeated = tree[2][1]
    assert low == 1
    [(branch, (_, alternatives))] = list(repeated)
    assert str(branch) == "BRANCH"
    assert [[str(op) for op, _ in alternative] for alternative in alternatives] == [
        ["LITERAL"] * 2,
        ["LITERAL"],
    ]


def test_without_the_parser_every_pattern_is_searched_and_classifies_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(literals, "_parser", None)
    assert parse_tree(re.compile("timed out")) is None
    book = pattern_book()
    unfiltered = PatternBook(
        tuple(Pattern.compile(p.name, p.signal_type, p.regex.pattern, p.example) for p in book.patterns),
        book.extractors,
    )
    assert all(pattern.needs is None for pattern in unfiltered.patterns)
    examples = [p.example for p in book.patterns if p.example] + ["nothing to see", "HTTP 503 upstream"]
    for example in examples:
        assert classify(example, unfiltered) == classify(example, book), example


def test_every_pattern_has_required_texts() -> None:
    # Not required for correctness; a pattern without them is searched on every message.
    assert [p.name for p in pattern_book().patterns if not p.needs] == []
