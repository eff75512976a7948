"""Blocker classification by the documented patterns of data/failure_patterns.toml."""

from __future__ import annotations

import time

import pytest

from mcp_server_escalation.datafiles import pattern_book
from mcp_server_escalation.models.limits import TEXT_MAX
from mcp_server_escalation.rules.reading.classify import classify


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
        ("expect(received).toBe(expected) // Object.is equality", "test_failure", {}),
        ("===== 3 failed, 12 passed in 2.41s =====", "test_failure", {}),
        ("upstream said 504\t Gateway Timeout", "api_unavailable", {"status_code": 504}),
        ("sh: 1: jq: command not found", "missing_dependency", {"dependency": "jq"}),
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


# Runs of one shape at the length limit of a message: a pattern that tries every start
# inside a run and reads to its end costs the square of the length (a 64 KiB run of word
# characters took 40 s in one rule). The bound is a hang guard: each takes milliseconds.
LONG_SHAPES = ("x", "1", " ", "\n", "a_", "a.", "/a", "@a", ":1", '"', "'a", "expect(", "a: ")
LONG_READ_HUNG_AFTER = 3.0


@pytest.mark.parametrize("shape", LONG_SHAPES)
def test_a_message_of_one_repeated_shape_at_the_limit_is_classified_in_linear_time(shape: str) -> None:
    message = (shape * (TEXT_MAX // len(shape)))[:TEXT_MAX]
    started = time.perf_counter()
    for error_type in (None, "Error"):  # classify is cached: two messages, two reads
        classify(message, pattern_book(), error_type=error_type)
    assert time.perf_counter() - started < LONG_READ_HUNG_AFTER
