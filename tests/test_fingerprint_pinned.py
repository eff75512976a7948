"""The fingerprint algorithm, pinned to fixed values.

A store matches a new failure to its history by fingerprint and a search query to records
by message key. Any change to either function (a normaliser, the order of the fields, the
salient-line choice, the digest) silently splits every existing store's history in two:
old records stop matching new occurrences, counts restart and guidance loses its past. So a
change must be deliberate, come with a migration that recomputes stored values, and update
these values in the same commit.
"""

from __future__ import annotations

import pytest

from mcp_server_escalation.rules.reading.fingerprint import fingerprint, message_key

_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/x/a.py", line 3, in <module>\n'
    "    f()\n"
    "ZeroDivisionError: division by zero\n"
)
_PYTEST_TAIL = (
    "============ 1 failed, 3 passed in 0.12s ============\n"
    "FAILED tests/test_a.py::test_b - AssertionError: assert 1 == 2\n"
)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"signal_type": "test_failure", "step": "main", "message": "AssertionError: expected 3 got 4"},
            "fp-edd05c067b0a3724",
        ),
        (
            {
                "signal_type": "runtime_error",
                "step": "main",
                "message": "KeyError: 'srcdir'",
                "tool_name": "Bash",
                "error_code": "exit 1",
            },
            "fp-ec5d6215269b4aeb",
        ),
        (
            {
                "signal_type": "tool_error",
                "step": "review_code",
                "message": "ModuleNotFoundError: No module named 'numpy'",
                "error_type": "ModuleNotFoundError",
            },
            "fp-319a93766d447ad1",
        ),
        (
            {
                "signal_type": "runtime_error",
                "step": "main",
                "message": _TRACEBACK,
                "tool_name": "Bash",
                "error_code": "exit 1",
            },
            "fp-5e17f429ef785f76",
        ),
        ({"signal_type": "test_failure", "step": "main", "message": _PYTEST_TAIL}, "fp-b158277aed35aa4b"),
    ],
    ids=["one-line", "quoted-name", "structured-fields", "traceback", "pytest-output"],
)
def test_the_fingerprint_of_a_known_failure_never_changes(fields: dict[str, str], expected: str) -> None:
    assert fingerprint(**fields) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("AssertionError at /tmp/run-1/test_a.py:10: expected 3 got 4", "2864c55504858af7"),
        ("KeyError: 'srcdir' at 0x7f3a2b", "b43960d5ea529789"),
    ],
)
def test_the_search_key_of_a_known_message_never_changes(message: str, expected: str) -> None:
    assert message_key(message) == expected
