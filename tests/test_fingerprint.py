"""Fingerprint normalisation: the same error is the same error wherever it happens."""

from __future__ import annotations

import pytest

from mcp_server_escalation.rules.reading.fingerprint import fingerprint, fingerprinted_text, normalise_message


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


# The same failure as a tool prints it twice: another debug print, another temp dir in the
# frames, a traceback one frame shorter, another count of passing tests.
_RUN_ONE = """\
DEBUG: cart has 3 items
Traceback (most recent call last):
  File "/tmp/run-1/reproduce.py", line 12, in <module>
    main()
  File "/app/shop/cart.py", line 41, in main
    total = price(item)
  File "/app/shop/cart.py", line 18, in price
    return PRICES[item.currency]
KeyError: 'EUR'
"""
_RUN_TWO = """\
DEBUG: cart has 4 items
DEBUG: currency is EUR
Traceback (most recent call last):
  File "/tmp/run-2/reproduce.py", line 15, in <module>
    price(item)
  File "/app/shop/cart.py", line 19, in price
    return PRICES[item.currency]
KeyError: 'EUR'
"""


def test_the_same_failure_printed_with_other_noise_has_one_fingerprint() -> None:
    assert _fp(_RUN_ONE) == _fp(_RUN_TWO)
    # ... and is the same error as the bare exception line an agent would record itself.
    assert _fp(_RUN_ONE) == _fp("KeyError: 'EUR'")
    first = (
        "..F.\nE       assert 3 == 4\n\ntests/test_calc.py:9: AssertionError\n1 failed, 3 passed in 0.13s\n"
    )
    again = (
        ".F...\nE       assert 3 == 4\n\ntests/test_calc.py:9: AssertionError\n1 failed, 4 passed in 0.2s\n"
    )
    assert _fp(first) == _fp(again)


def test_different_errors_under_the_same_noise_keep_different_fingerprints() -> None:
    assert _fp(_RUN_ONE) != _fp(_RUN_ONE.replace("KeyError: 'EUR'", "TypeError: price() needs a currency"))
    assert _fp(_RUN_ONE) != _fp(_RUN_ONE.replace("KeyError", "AttributeError"))


def test_an_output_with_no_recognised_error_is_fingerprinted_whole() -> None:
    assert fingerprinted_text("step 1 of 3\nstep 2 of 3\nstopped") == "step 1 of 3\nstep 2 of 3\nstopped"
    assert _fp("cart: 3 items\nstopped") != _fp("queue: 3 jobs\nstopped")


def test_a_one_line_message_keeps_the_fingerprint_it_had_before_issue_14() -> None:
    # Computed with the fingerprint of the release before: stored records of one-line
    # messages (what agents record through the tool) keep matching new occurrences. Only a
    # quoted name changed it since (issue 15: it names what failed).
    assert fingerprint(
        signal_type="runtime_error",
        step="main",
        message="KeyError: '/srv/next url' at line 3",
        tool_name="Bash",
        error_code="exit 1",
    ) == fingerprint(
        signal_type="runtime_error",
        step="main",
        message="KeyError: '/srv/other url' at line 9",
        tool_name="Bash",
        error_code="exit 1",
    )
    assert _fp("TypeError: undefined is not a function") == "fp-5b374c518e563599"


def test_errors_about_different_quoted_names_are_different_errors() -> None:
    # Seen in a real run: three different missing attributes in a row were one "repeated"
    # error while every quoted text was replaced.
    first = _fp("AttributeError: Mock object has no attribute 'srcdir'")
    assert first != _fp("AttributeError: Mock object has no attribute 'events'")
    assert first == _fp("AttributeError: Mock object has no attribute 'srcdir'")


def test_a_fingerprint_keeps_quoted_names_and_drops_other_quoted_text() -> None:
    assert normalise_message("No module named 'lodash'", keep_names=True) == "no module named 'lodash'"
    assert normalise_message("KeyError: 'user_42'", keep_names=True) == "keyerror: 'user_<n>'"
    assert normalise_message("cannot read '/srv/app/x.py'", keep_names=True) == "cannot read <str>"
