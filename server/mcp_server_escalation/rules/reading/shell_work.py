"""What a shell command did, as far as the triggers care: which files it wrote, and which
operation it was (pure, no I/O).

Agents that work through the shell edit with ``sed -i``, ``cat > file <<EOF`` or ``tee``
instead of an edit tool. Such a command is progress on the files it writes, as an edit is;
without this an agent that only ever edits through the shell looks as if it changed
nothing. The files are read from what the command says, never guessed: output redirection
(``>``, ``>>``) to a file, ``sed -i``'s files, ``tee``'s files, and the destination of ``cp``
and ``mv``. A command that writes in ways we cannot read (``python -c``, ``git apply``,
``patch``) names no file. Here-document bodies are skipped, their opening line is read.

An *operation* is what a failure and a later success must share for the success to end a run
of identical errors: the command with what does not change what it does taken away (leading
``cd``, ``source`` and ``export`` steps, ``2>&1``, a trailing ``| head``/``| tail``/``| grep``
filter, runs of blanks). ``python reproduce.py`` failing and ``cd /testbed && python
reproduce.py 2>&1 | tail -20`` succeeding are the same operation.

The *files a command names* are the names of the files among its words (``reproduce.py`` in
``python reproduce.py``, ``test_calc.py`` in ``pytest tests/test_calc.py::test_add``): an
edit of one of them changes the check the command runs, not the code it checks.
"""

from __future__ import annotations

import hashlib
import re

from .commands import COMMAND_MAX_CHARS, shell_words

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&"})
_NOT_A_FILE = re.compile(r"^(?:/dev/|&?[0-9]$|-$)")
_SETUP = frozenset({"cd", "source", ".", "export", "set", "pushd", "popd", "unset"})
_FILTERS = frozenset({"head", "tail", "grep", "egrep", "fgrep", "less", "more", "cat", "sort", "uniq", "wc"})
OPERATION_KEY_CHARS = 16


def command_lines(command: str) -> list[str]:
    """The command's lines with here-document bodies left out (their opening line kept)."""
    kept: list[str] = []
    ending: str | None = None
    for line in command[:COMMAND_MAX_CHARS].split("\n"):
        if ending is not None:
            if line.strip() == ending:
                ending = None
            continue
        kept.append(line)
        opened = _HEREDOC.search(line)
        if opened:
            ending = opened.group(2)
    return kept


# ``2>&1`` and ``>&2`` move a stream, ``2>`` redirects one: only the target matters here.
_STREAM_MOVE = re.compile(r"(?:^|(?<=\s))\d?>&\d+(?=\s|$)")
_STREAM_REDIRECT = re.compile(r"(?:^|(?<=\s))\d(>>?)")


def _segments(line: str) -> list[list[str]]:
    line = _STREAM_REDIRECT.sub(r" \1", _STREAM_MOVE.sub(" ", line))
    words = shell_words(line.replace("<<", " << "))
    if words is None:
        return []
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _file(word: str) -> str | None:
    return None if not word or _NOT_A_FILE.match(word) or word.startswith("$") else word


def _sed_files(arguments: list[str]) -> list[str]:
    """The files of ``sed``: its operands after the script (given as ``-e``/``-f`` or first)."""
    operands: list[str] = []
    scripted = False
    skip = False
    for argument in arguments:
        if skip:
            skip = False
        elif argument in ("-e", "--expression", "-f", "--file"):
            scripted = skip = True
        elif argument.startswith(("--expression=", "--file=")):
            scripted = True
        elif not argument.startswith("-"):
            operands.append(argument)
    return operands if scripted else operands[1:]


def _segment_writes(words: list[str]) -> list[str]:
    written: list[str] = []
    rest: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        if word in (">", ">>", "&>", ">|") and position + 1 < len(words):
            target = _file(words[position + 1])
            if target:
                written.append(target)
            position += 2
            continue
        if word in ("<", "<<", "<<<") and position + 1 < len(words):
            position += 2
            continue
        rest.append(word)
        position += 1
    if not rest:
        return written
    program, arguments = rest[0].rsplit("/", 1)[-1], rest[1:]
    plain = [a for a in arguments if not a.startswith("-")]
    if program == "sed" and any(re.match(r"^-[a-zA-Z]*i|^--in-place", a) for a in arguments):
        written += [f for f in _sed_files(arguments) if _file(f)]
    elif program == "tee":
        written += [f for f in plain if _file(f)]
    elif program in ("cp", "mv") and len(plain) >= 2 and _file(plain[-1]):
        written.append(plain[-1])
    return written


def written_files(command: str) -> list[str]:
    """The files ``command`` says it writes, in order, each once (module docstring)."""
    found: list[str] = []
    for line in command_lines(command):
        for segment in _segments(line):
            found += _segment_writes(segment)
    return list(dict.fromkeys(found))


def _essential(line: str) -> str:
    segments = _segments(line)
    while segments and segments[0][0] in _SETUP:
        segments.pop(0)
    while len(segments) > 1 and segments[-1][0] in _FILTERS:
        segments.pop()
    return " ; ".join(" ".join(s) for s in segments)


def operation_key(action: str) -> str:
    """A short key naming the operation of ``action`` (module docstring)."""
    tool, sep, command = action.partition(": ")
    body = command if sep else action
    essential = " \n".join(_essential(line) for line in command_lines(body) if line.strip())
    text = f"{tool}: {essential}" if sep else essential
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()[
        :OPERATION_KEY_CHARS
    ]


# Of the files a command names, at most this many names are kept, each at most this long.
NAMED_FILES = 8
NAMED_FILE_CHARS = 120
# A word naming a file: a name with an extension (``reproduce.py``, ``calc.test.ts``), after
# any folders; a pytest node id's ``::test`` part is not the file's.
_FILE_NAME = re.compile(r"(?:^|/)([\w.-]*\w\.[A-Za-z]\w{0,9})(?:::\S*)?$")


def named_files(action: str) -> tuple[str, ...]:
    """The names of the files ``action``'s command names (module docstring), in order."""
    _tool, sep, command = action.partition(": ")
    names: dict[str, None] = {}
    for line in command_lines(command if sep else action):
        for word in shell_words(line) or line.split():  # an unclosed quote: its plain words
            found = _FILE_NAME.search(word.strip("'\"()"))
            if found and len(found.group(1)) <= NAMED_FILE_CHARS:
                names[found.group(1)] = None
    return tuple(names)[:NAMED_FILES]
