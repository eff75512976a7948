"""Fingerprint normalisation: the same error is the same error wherever it happens."""

from __future__ import annotations

import pytest

from mcp_server_escalation.rules.fingerprint import fingerprint, normalise_message


@pytest.mark.parametrize(
    ("message", "normalised"),
    [
        ("TypeError: undefined is not a function", "typeerror: undefined is not a function"),
        ("  Mixed   CASE\n\twhitespace ", "mixed case whitespace"),
        ("failed after 3 retries in 1.5s", "failed after <n> retries in <n>s"),
        ("at app.js:12:5", "at app.js:<n>"),
        ("error on line 42, column 7", "error on line <n>"),
        ("object 0x7fff5a2b freed twice", "object <hex> freed twice"),
        ("commit deadbeef12 not found", "commit <hex> not found"),
        ("request 3fa85f64-5717-4562-a567-0c963f66afa6 failed", "request <uuid> failed"),
        ("at 2026-11-21T10:00:00.123Z the job died", "at <ts> the job died"),
        ("at 10:00:01 the job died", "at <ts> the job died"),
        ("cannot open /tmp/pytest-of-root/pytest-3/test_x0/a.py", "cannot open <tmp>"),
        ("cannot open /var/folders/xy/T/abc", "cannot open <tmp>"),
        ("No module named 'lodash'", "no module named <str>"),
        ('KeyError: "user_id"', "keyerror: <str>"),
        ("unexpected token `}`", "unexpected token <str>"),
    ],
)
def test_normalisation_replaces_volatile_parts(message: str, normalised: str) -> None:
    assert normalise_message(message) == normalised


def _fp(message: str, **fields: str) -> str:
    base = {"signal_type": "runtime_error", "step": "main"}
    base.update(fields)
    return fingerprint(message=message, **base)  # type: ignore[arg-type]


def test_same_error_at_another_line_or_tempdir_has_the_same_fingerprint() -> None:
    first = _fp("AssertionError at /tmp/run-1/test_a.py:10: expected 3 got 4")
    second = _fp("AssertionError at /tmp/run-2/test_a.py:97: expected 5 got 6")
    assert first == second


def test_fingerprint_is_deterministic_and_compact() -> None:
    value = _fp("TypeError: undefined is not a function")
    assert value == _fp("TypeError: undefined is not a function")
    assert value.startswith("fp-")
    assert len(value) == 3 + 16


@pytest.mark.parametrize(
    "change",
    [
        {"signal_type": "tool_error"},
        {"step": "review_code"},
        {"error_type": "ReferenceError"},
        {"tool_name": "bash"},
        {"error_code": "E42"},
    ],
)
def test_each_structured_field_is_part_of_the_fingerprint(change: dict[str, str]) -> None:
    assert _fp("boom") != _fp("boom", **change)


def test_different_messages_have_different_fingerprints() -> None:
    assert _fp("TypeError: undefined is not a function") != _fp("ReferenceError: x is not defined")


def test_structured_fields_are_case_and_space_insensitive() -> None:
    assert _fp("boom", error_type="TypeError") == _fp("boom", error_type=" typeerror ")
