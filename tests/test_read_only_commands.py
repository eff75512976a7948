"""The read-only judgement of a shell command: bounded work, unchanged answers.

A hook judges every shell command the agent runs, against the host's 15 s hook timeout. The
work is measured in Python steps (line events of the interpreter), which do not depend on
how busy the machine is: a judgement must never take more steps for one long word than for
a short one, and a command over the cap is not examined at all.
"""

from __future__ import annotations

import random
import shlex
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from mcp_server_escalation.rules.reading.commands import (
    COMMAND_MAX_CHARS,
    is_read_only_command,
    is_test_command,
    shell_words,
)

MIB = 1024 * 1024


def python_steps(work: Callable[[], object]) -> int:
    """How many lines of Python ``work`` executes (every module, the standard library's too)."""
    steps = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal steps
        if event == "line":
            steps += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(previous)
    return steps


def shlex_words(command: str) -> list[str] | None:
    """What the judgement was built on: the standard library's POSIX shell lexer."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def test_a_one_mebibyte_command_is_not_read_only_and_is_not_examined() -> None:
    reading = "cat " + "a " * ((MIB - 4) // 2)
    one_word = "grep '" + "x" * (MIB - 9) + "' f"

    for command in (reading, one_word):
        assert len(command) > COMMAND_MAX_CHARS
        assert is_read_only_command(command) is False
        # Refused by its length alone: a handful of steps, nothing proportional to it.
        assert python_steps(lambda c=command: is_read_only_command(c + " ")) < 20


def test_the_cap_is_where_a_reading_command_stops_being_read_only() -> None:
    at_cap = "cat " + "a" * (COMMAND_MAX_CHARS - 4)
    assert len(at_cap) == COMMAND_MAX_CHARS
    assert is_read_only_command(at_cap) is True
    assert is_read_only_command(at_cap + "b") is False


@pytest.mark.parametrize("quote", ["'", '"', ""], ids=["single-quoted", "double-quoted", "bare"])
def test_one_long_word_costs_the_same_python_steps_as_a_short_one(quote: str) -> None:
    # The lexer took each character of a word in a Python step and copied the word so far
    # with it (quadratic: ~14 s for one 1 MiB word, over the host's 15 s hook timeout).
    short = f"grep {quote}x{quote} f"
    long = f"grep {quote}{'x' * (COMMAND_MAX_CHARS - 20)}{quote} f"

    assert shell_words(long) == ["grep", "x" * (COMMAND_MAX_CHARS - 20), "f"]
    # Fresh strings each time: the judgement is cached per command.
    short_steps = python_steps(lambda: is_read_only_command(short + " "))
    long_steps = python_steps(lambda: is_read_only_command(long + " "))
    assert long_steps == short_steps


def test_steps_grow_with_the_words_of_a_command_never_with_their_length() -> None:
    words = 500
    short = python_steps(lambda: shell_words("cat" + " 'a'" * words))
    long = python_steps(lambda: shell_words("cat" + " 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'" * words))
    assert long == short
    assert short < 30 * words


# Characters that exercise every rule of the lexer: quotes, escapes, operators, blanks.
ALPHABET = "ab-=./*~é ;|&<>()'\"\\\t\r12"


def _random_commands(seed: int, count: int) -> list[str]:
    generate = random.Random(seed)  # noqa: S311 (reproducible test data, not secrets)
    return ["".join(generate.choices(ALPHABET, k=generate.randint(0, 24))) for _ in range(count)]


def test_the_words_of_any_command_without_a_hash_are_the_ones_shlex_gives() -> None:
    commands = [
        *_random_commands(14, 20_000),
        "ls -la src",
        "cat src/app.py | head -40",
        "grep -rn 'def add' src 2>/dev/null",
        'echo "a \\"quoted\\" \\\\ \\$x" done',
        "wc -l < src/app.py >&2",
        "ls ''",
        "a''b\"\"c",
        "echo \\ x \\;",
    ]
    differing = [c for c in commands if shell_words(c) != shlex_words(c)]
    assert differing == []


def test_a_hash_starting_a_word_begins_a_comment_as_shlex_and_the_shell_read_it() -> None:
    # Heads that end outside any quote or escape, so the "#" after them starts a word.
    heads = [h for h in _random_commands(16, 4_000) if shlex_words(h) is not None and not h.endswith("\\")]
    tails = _random_commands(17, len(heads))
    commands = [
        f"{head}{gap}#{tail}" for head, tail in zip(heads, tails, strict=True) for gap in (" ", ";", "|")
    ]
    differing = [c for c in commands if shell_words(c) != shlex_words(c)]
    assert differing == []


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # Inside a word the shell reads "#" as a character: these write and must not pass.
        ("echo a#b > out", False),
        ("echo a#; rm -rf build", False),
        ('echo "a"#; touch z', False),
        ("ls x#|rm y", False),
        # Where a word starts it begins a comment: nothing after it runs.
        ("cat f # > out", True),
        ("ls # ; rm -rf build", True),
        ("grep -n '#' src/app.py", True),
        ("echo a#b", True),
    ],
)
def test_a_hash_inside_a_word_is_part_of_the_word_as_in_the_shell(command: str, expected: bool) -> None:
    assert is_read_only_command(command) is expected


def test_only_the_first_part_of_a_long_command_is_searched_for_a_test_runner() -> None:
    assert is_test_command("pytest -q tests " + "x" * MIB) is True
    assert is_test_command("x" * COMMAND_MAX_CHARS + " && pytest -q") is False
    assert is_test_command("x" * (COMMAND_MAX_CHARS - 20) + " && pytest -q") is True
