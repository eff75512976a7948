"""Shell commands as the hooks see them: is it a test run, is it only reading (pure, no I/O).

Read-only is decided conservatively, because a command we call read-only is never recorded
and is let through while a task is paused. A command is read-only when every part of its
pipeline (``|``, ``&&``, ``||``, ``;``) starts with a known read-only program and nothing
in it can write or run something else: no ``$(...)`` or backticks, no subshells, no
background ``&``, no variable assignments, no here-documents, no output redirection other
than to ``/dev/null`` or another descriptor. Programs that can write by option are read-only
only without it (``sed`` without ``-i``, ``sort`` without ``-o``, ``find`` without
``-exec``/``-delete``...); ``git`` only with a reading subcommand. Anything we cannot
tokenise is not read-only, and neither is a command longer than ``COMMAND_MAX_CHARS``.

Bounded work: a hook judges every command the agent runs, within the host's 15 s hook
timeout. The words are cut by one regular-expression step per quoted or bare piece and
joined once, so the work is linear in the command's length; ``shlex`` appended each
character to the word so far, a copy per character (one 1 MiB word took ~14 s). Past the
cap a command is not examined at all: reading commands are short (the longest of 4,504 in
250 real agent runs had 206 characters), and calling a long one "not read-only" costs
little (it is recorded, or held during a pause) where the opposite would let a write through.
"""

from __future__ import annotations

import re
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
# The most of a command the judgements examine (module docstring: bounded work): a longer
# one is not read-only, and only this much of it is searched for a test runner.
COMMAND_MAX_CHARS = 16 * 1024
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
    """True when ``command`` runs a test suite (the configured pattern, in its first 16 KiB)."""
    # Bounded like the read-only check: the pattern tried at each of a 1 MiB command's
    # positions took ~0.3 s a call, and a configured pattern may be slower still.
    return _compiled(pattern).search(command, 0, COMMAND_MAX_CHARS) is not None


# One piece of a command at the current position: blanks, a quoted or escaped part of a word,
# a run of operator characters, a comment, or a bare part of a word. The words are those of
# POSIX ``shlex`` with punctuation characters (what the judgement was first built on), but
# for "#" inside a word, which the shell reads as a character and shlex as a comment: with
# shlex, ``echo a#b > out`` read as ``echo a`` and passed as read-only.
_PIECE = re.compile(
    r"""
    (?P<blank>[ \t\r]+)
    |(?P<single>'[^']*')
    |(?P<double>"[^"\\]*(?:\\.[^"\\]*)*")
    |(?P<escaped>\\.)
    |(?P<operator>[();<>|&]+)
    |(?P<comment>\#.*)
    |(?P<bare>[^ \t\r'"\\();<>|&]+)
    """,
    re.VERBOSE | re.DOTALL,
)
# Inside double quotes a backslash escapes only a double quote or itself (as in shlex).
_DOUBLE_QUOTED_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def _unescape(match: re.Match[str]) -> str:
    return match[1] if match[1] in '"\\' else match[0]


def _unquoted(kind: str | None, text: str) -> str:
    """What a piece of a word stands for: quotes removed, escapes resolved."""
    if kind == "single":
        return text[1:-1]
    if kind == "double":
        return _DOUBLE_QUOTED_ESCAPE.sub(_unescape, text[1:-1])
    if kind == "escaped":
        return text[1]
    return text


def shell_words(command: str) -> list[str] | None:
    """The words and operators of ``command``; None for an unclosed quote or a trailing ``\\``."""
    words: list[str] = []
    parts: list[str] = []  # of the word being read, joined once at its end
    in_word = False
    position = 0
    while position < len(command):
        piece = _PIECE.match(command, position)
        if piece is None:
            return None
        kind = piece.lastgroup
        if kind == "comment" and in_word:  # "#" after a quote, inside a word
            parts.append("#")
            position += 1
            continue
        position = piece.end()
        if kind in ("blank", "operator", "comment"):
            if in_word:
                words.append("".join(parts))
                parts, in_word = [], False
            if kind == "operator":
                words.append(piece.group())
            continue
        in_word = True
        parts.append(_unquoted(kind, piece.group()))
    if in_word:
        words.append("".join(parts))
    return words


def _tokens(command: str) -> list[str] | None:
    if "`" in command or "$(" in command or "<<" in command or "\n" in command:
        return None
    return shell_words(command)


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


def _segments(tokens: list[str]) -> list[list[str]] | None:
    """The simple commands of a command line, split at its separators, with input read from
    a file and output sent to a safe target (``/dev/null``) left out; None when an operator
    or a redirection may write or run something else."""
    segments: list[list[str]] = [[]]
    pending_redirect = False
    for part in tokens:
        if pending_redirect:
            if not _SAFE_TARGET.match(part):
                return None
            pending_redirect = False
        elif part in _SEPARATORS:
            segments.append([])
        elif part in (">", ">>", ">&", "&>"):
            pending_redirect = True
        elif part == "<":
            continue  # input from a file only reads it
        elif part and set(part) <= set("();<>|&"):
            return None  # subshells, background jobs, unusual operators
        else:
            segments[-1].append(part)
    return None if pending_redirect else segments


@lru_cache(maxsize=1024)
def _reads_only(command: str, allowed: frozenset[str]) -> bool:
    tokens = _tokens(command.strip())
    segments = _segments(tokens) if tokens else None
    return segments is not None and all(_segment_reads_only(words, allowed) for words in segments)


def is_read_only_command(command: str, extra: Iterable[str] = ()) -> bool:
    """True when ``command`` only reads (see the module docstring); ``extra`` adds programs."""
    if len(command) > COMMAND_MAX_CHARS:
        return False  # not examined, and not kept in the cache either
    allowed = frozenset(DEFAULT_READ_ONLY_COMMANDS) | frozenset(extra)
    return _reads_only(command, allowed)
