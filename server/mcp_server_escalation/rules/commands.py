"""Shell commands as the hooks see them: is it a test run, is it only reading (pure, no I/O).

Read-only is decided conservatively, because a command we call read-only is never recorded
and is let through while a task is paused. A command is read-only when every part of its
pipeline (``|``, ``&&``, ``||``, ``;``) starts with a known read-only program and nothing
in it can write or run something else: no ``$(...)`` or backticks, no subshells, no
background ``&``, no variable assignments, no here-documents, no output redirection other
than to ``/dev/null`` or another descriptor. Programs that can write by option are read-only
only without it (``sed`` without ``-i``, ``sort`` without ``-o``, ``find`` without
``-exec``/``-delete``...); ``git`` only with a reading subcommand. Anything we cannot
tokenise is not read-only.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from functools import lru_cache

DEFAULT_READ_ONLY_COMMANDS: tuple[str, ...] = (
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "ls",
    "tree",
    "find",
    "fd",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "wc",
    "file",
    "stat",
    "du",
    "df",
    "pwd",
    "cd",
    "echo",
    "printf",
    "which",
    "whereis",
    "type",
    "date",
    "sort",
    "cut",
    "tr",
    "nl",
    "column",
    "jq",
    "diff",
    "cmp",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "id",
    "whoami",
    "uname",
    "hostname",
    "printenv",
    "true",
    "sed",
    "bat",
    "git",
)
READ_ONLY_GIT: frozenset[str] = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "ls-files",
        "ls-tree",
        "grep",
        "rev-parse",
        "describe",
        "shortlog",
        "cat-file",
        "whatchanged",
    }
)
# Options that make an otherwise reading program write or run something.
_WRITING_OPTIONS: dict[str, tuple[str, ...]] = {
    "sed": ("-i", "--in-place"),
    "sort": ("-o", "--output"),
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "fd": ("-x", "--exec", "-X", "--exec-batch"),
    "rg": ("--pre",),
}
_SEPARATORS = frozenset({"|", "||", "&&", ";"})
_SAFE_TARGET = re.compile(r"^(?:/dev/null|&?[0-2]|-)$")

# The hosts' suggested test-command detector (attractor's isSelfciCommand, widened).
DEFAULT_TEST_COMMAND = (
    r"\b(?:pytest|py\.test|jest|vitest|go\s+test|cargo\s+(?:test|nextest)|mocha|rspec"
    r"|(?:npm|pnpm|yarn|bun)(?:\s+run)?\s+test|deno\s+test|tox|nox|make\s+(?:test|check)"
    r"|just\s+test)\b"
)


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def is_test_command(command: str, pattern: str = DEFAULT_TEST_COMMAND) -> bool:
    """True when ``command`` runs a test suite (by the configured pattern)."""
    return _compiled(pattern).search(command) is not None


def _tokens(command: str) -> list[str] | None:
    if "`" in command or "$(" in command or "<<" in command or "\n" in command:
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes
        return None


def _segment_reads_only(words: list[str], allowed: frozenset[str]) -> bool:
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program not in allowed or "=" in words[0]:
        return False
    options = _WRITING_OPTIONS.get(program, ())
    if any(w == o or (o.startswith("--") and w.startswith(o + "=")) for w in words[1:] for o in options):
        return False
    if program == "sed" and any(re.match(r"^-[a-zA-Z]*i", w) for w in words[1:]):
        return False
    if program == "git":
        rest = words[1:]
        while rest and rest[0].startswith("-"):
            # "git -C dir status", "git --no-pager log"
            rest = rest[2:] if rest[0] in ("-C", "-c") else rest[1:]
        return bool(rest) and rest[0] in READ_ONLY_GIT
    return True


@lru_cache(maxsize=1024)
def _reads_only(command: str, allowed: frozenset[str]) -> bool:
    tokens = _tokens(command.strip())
    if not tokens:
        return False
    words: list[str] = []
    pending_redirect = False
    for part in tokens:
        if pending_redirect:
            if not _SAFE_TARGET.match(part):
                return False
            pending_redirect = False
        elif part in _SEPARATORS:
            if not _segment_reads_only(words, allowed):
                return False
            words = []
        elif part in (">", ">>", ">&", "&>"):
            pending_redirect = True
        elif part == "<":
            continue  # input from a file only reads it
        elif part and set(part) <= set("();<>|&"):
            return False  # subshells, background jobs, unusual operators
        else:
            words.append(part)
    if pending_redirect:
        return False
    return _segment_reads_only(words, allowed)


def is_read_only_command(command: str, extra: Iterable[str] = ()) -> bool:
    """True when ``command`` only reads (see the module docstring); ``extra`` adds programs."""
    allowed = frozenset(DEFAULT_READ_ONLY_COMMANDS) | frozenset(extra)
    return _reads_only(command, allowed)
