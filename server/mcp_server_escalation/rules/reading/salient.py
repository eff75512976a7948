"""The salient error line(s) of a tool output (pure, no I/O).

A summary that keeps the first characters of a multi-line output keeps its banner
(``Traceback (most recent call last):``, ``=====``, ``> shop@1.4.0 build``), not its error.
This module finds the line(s) that name the error, by the formats each tool prints:

- a lint guard that refused an edit (an agent's editor that runs flake8 on the edited file
  and keeps the file as it was): the first error of its ``ERRORS:`` list (``E999
  IndentationError: unexpected indent``), else its line saying the edit was not applied; the
  instructions the guard prints after them (do not re-run the same edit) are no error;
- pytest: the first ``E   ...`` line of a failure's explanation;
- Python: the exception line after the innermost ``File "...", line N`` frame (of the last
  traceback of a chain: the one that ended the program), with that frame;
- pytest again: the ``FAILED``/``ERROR`` lines of the short test summary (``--tb=no``), or
  the whole error line a summary line cut short (``- AssertionErr...``) abbreviates;
- jest: a ``●`` test header with the first line of its message; vitest: a failed test's
  line with its ``→`` message;
- tsc: ``error TSxxxx:`` lines;
- Rust: a thread's ``panicked at`` with its message; cargo and rustc: ``error[E0xxx]:``
  with its ``-->`` location (the closing ``could not compile`` says nothing new);
- go: ``panic:``, build errors at ``file.go:line:col``, ``--- FAIL`` with the test's message;
- node (and mocha): the error line above a stack of ``at`` frames;
- an exception line whose frames were cut off (``XxxError: ...``, the last one);
- anything else: an ``error:``/``fatal:``/``FAIL:`` line (the first: compilers print the
  cause first, then its consequences), then the first ``npm ERR!`` line that says more than
  a code, an errno or a log path (npm's own lines only restate that a script failed), then
  a line saying that something failed or was not found (the last: a shell's exit status is
  its last command's).

The finders run in that order and the first that finds something wins. Output in which
none finds anything keeps its last line (every tool ends with what it was doing when it
stopped); a one-line text is its own headline. Work is bounded whatever the input: only the
last ``SCAN_CHARS`` characters and ``SCAN_LINES`` lines are read (every runner prints its
errors and summary at the end), each line cut to ``LINE_CHARS``, and the patterns are
compiled at first use (the host hook starts a process per tool call).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

from .shell_output import strip_ansi

SCAN_CHARS = 32_768
SCAN_LINES = 400
LINE_CHARS = 1_000
HEADLINE_CHARS = 200
# How many salient lines a finder keeps: a run with 40 failing tests names the first few.
SALIENT_LINES = 5
# Joins the parts of a headline taken from two lines (a test's name and its message).
JOIN = " | "
ELLIPSIS = "…"
# How far (in characters) an exception line may follow its innermost frame: source lines,
# carets and notes come between.
_EXCEPTION_WITHIN = 2_000

# Every C0/C1 control character becomes a space: neither a newline nor an escape survives.
_CONTROLS = dict.fromkeys([*range(0x20), 0x7F, *range(0x80, 0xA0)], " ")


class Salient(NamedTuple):
    """What was recognised: the format, a one-line headline, and the salient lines."""

    kind: str
    headline: str
    lines: tuple[str, ...]


@cache
def _rx(pattern: str, flags: int = re.MULTILINE) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def one_line(text: str, limit: int = HEADLINE_CHARS) -> str:
    """``text`` on one line: control characters and whitespace runs become one space, clipped."""
    flat = " ".join(text.translate(_CONTROLS).split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1] + ELLIPSIS if limit > 0 else ""


def scanned(text: str) -> str:
    """The part of ``text`` the finders read: its tail, ANSI stripped, lines cut to size."""
    tail = strip_ansi(text[-SCAN_CHARS:])
    lines = tail.split("\n")
    if len(text) > SCAN_CHARS and any(line.strip() for line in lines[1:]):
        lines = lines[1:]  # the cut went through a line: its end alone is no line
    return "\n".join(line[:LINE_CHARS].rstrip() for line in lines[-SCAN_LINES:])


def _first(lines: list[str]) -> tuple[str, ...]:
    """Up to ``SALIENT_LINES`` distinct non-blank lines, in order."""
    kept: list[str] = []
    for line in lines:
        if line and line not in kept:
            kept.append(line)
        if len(kept) == SALIENT_LINES:
            break
    return tuple(kept)


def _next_text_line(text: str, pos: int) -> str:
    """The first non-blank line among the few from ``pos`` on (stripped), or ``""``."""
    for line in text[pos:].split("\n", 8)[:8]:
        if line.strip():
            return line.strip()
    return ""


def _continued(text: str, match: re.Match[str]) -> str:
    """The matched line, joined with the next one when it ends in a colon (its message)."""
    line = match.group(0).strip()
    return f"{line} {_next_text_line(text, match.end() + 1)}".strip() if line.endswith(":") else line


def _all(pattern: str, text: str, flags: int = re.MULTILINE) -> list[str]:
    return [m.group(0).strip() for m in _rx(pattern, flags).finditer(text)]


# --- pytest -----------------------------------------------------------------------------

_PYTEST_E = r"^E([ \t]+)(\S.*)$"
_PYTEST_LOCATION = r"^\S+:\d+: \w[\w.]*$"
_PYTEST_SUMMARY = r"^(?:FAILED|ERROR) \S*(?:::|\.py\b)\S*(?: - .*)?$"
_PYTEST_CUT = r" - (\S.*?)\.\.\.$"  # a summary's message cut to the terminal's width


def _pytest_errors(text: str) -> list[str]:
    """The error line of each block of ``E`` lines: its least indented line.

    That is the block's first line, unless the block lost its top to a cut and starts with
    continuations (``E     and: ...``). A block at the very top of the text is skipped for
    the same reason.
    """
    blocks: list[list[tuple[int, str]]] = []
    end = -2
    cut = False
    for match in _rx(_PYTEST_E).finditer(text):
        line = (len(match.group(1).expandtabs()), match.group(2).strip())
        if match.start() == end + 1:
            blocks[-1].append(line)
        else:
            blocks.append([line])
        cut = cut or match.start() == 0
        end = match.end()
    errors = []
    for block in blocks[1:] if cut else blocks:
        least = min(indent for indent, _line in block)
        errors.append(next(line for indent, line in block if indent == least))
    return errors


def _pytest(text: str) -> Salient | None:
    if "E " not in text and "E\t" not in text:
        return None
    errors = _pytest_errors(text)
    if not errors:
        return None
    where = _all(_PYTEST_LOCATION, text)[:1]
    summary = _all(_PYTEST_SUMMARY, text)
    return Salient("pytest", errors[0], _first([errors[0], *where, *summary, *errors[1:]]))


def _pytest_summary(text: str) -> Salient | None:
    if "FAILED " not in text and "ERROR " not in text:
        return None
    summary = _all(_PYTEST_SUMMARY, text)
    if not summary:
        return None
    first = _whole_error(text, summary[0]) or summary[0]
    return Salient("pytest", first, _first([first, *summary]))


def _whole_error(text: str, summary: str) -> str | None:
    """The whole error line a summary cut to the terminal's width abbreviates, if printed.

    pytest cuts ``FAILED t.py::x - AssertionError: long...`` to ``- Asser...``; the error it
    abbreviates is what a human needs, and may be printed above it whole."""
    cut = _rx(_PYTEST_CUT, 0).search(summary)
    if cut is None:
        return None
    prefix = cut.group(1)
    error_name = _rx(_PY_ERROR_NAME, 0)
    return next(
        (
            line
            for line in (raw.strip() for raw in text.split("\n"))
            if len(line) > len(prefix) and line.startswith(prefix) and error_name.match(line)
        ),
        None,
    )


# --- Python -----------------------------------------------------------------------------

_PY_FRAME = r'^[ \t]*File "[^"\n]*", line \d+.*$'
# ``ValueError: msg``, ``pkg.mod.CustomError``, ``KeyboardInterrupt``, at the line start.
_PY_EXCEPTION = r"^(?:[A-Za-z_]\w*\.)*_*[A-Z]\w*(?::.*)?$"
_PY_ERROR_NAME = r"^(?:[A-Za-z_]\w*\.)*_*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Iteration)(?::.*)?$"


def _python(text: str) -> Salient | None:
    if 'File "' not in text:
        return None
    frames = list(_rx(_PY_FRAME).finditer(text))
    if not frames:
        return None
    innermost = frames[-1]
    found = _rx(_PY_EXCEPTION).search(text, innermost.end(), innermost.end() + _EXCEPTION_WITHIN)
    if found is None:
        return None
    # ``TypeError:`` with its message on the next line: a multi-line message.
    error = _continued(text, found)
    return Salient("python", error, (error, innermost.group(0).strip()))


def _exception(text: str) -> Salient | None:
    if "Error" not in text and "Exception" not in text:
        return None
    found = _all(_PY_ERROR_NAME, text)[::-1]
    return Salient("exception", found[0], _first(found)) if found else None


# --- a lint guard's refusal of an edit -----------------------------------------------------

# The guard lists flake8's findings (``- E999 IndentationError: unexpected indent``, ``- F821
# undefined name 'x'``) under ``ERRORS:`` and says the edit was not applied. A finding may
# stand without its dash where a summary of the output already led with it.
_LINT_FINDING = r"^(?:- )?([A-Z]\d{3} \S.*)$"
_LINT_NOT_APPLIED = r"^Your (?:changes|edit) ha(?:ve|s) NOT been applied\b.*$"


def _lint_guard(text: str) -> Salient | None:
    if "NOT been applied" not in text:
        return None
    refused = _rx(_LINT_NOT_APPLIED).search(text)
    if refused is None:
        return None
    findings = [m.group(1).strip() for m in _rx(_LINT_FINDING).finditer(text, 0, refused.start())]
    if findings:
        return Salient("lint", findings[0], _first(findings))
    said = refused.group(0).strip()
    return Salient("lint", said, (said,))


# --- jest -------------------------------------------------------------------------------

_JEST_HEADER = r"^[ \t]*● (?!Console\b)(.+)$"


def _jest(text: str) -> Salient | None:
    if "●" not in text:
        return None
    tests = [
        (m.group(1).strip(), _next_text_line(text, m.end() + 1)) for m in _rx(_JEST_HEADER).finditer(text)
    ]
    if not tests:
        return None
    name, message = tests[0]
    lines = [line for test, said in tests for line in (f"● {test}", said)]
    return Salient("jest", JOIN.join(part for part in (name, message) if part), _first(lines))


# vitest marks a failed test with U+00D7 (or U+2715 in some reporters).
_CROSSES = ("\u00d7", "\u2715")
_VITEST_TEST = r"^[ \t]*[\u00d7\u2715] (.+)$"


def _vitest(text: str) -> Salient | None:
    if not any(cross in text for cross in _CROSSES):
        return None
    tests = []
    for match in _rx(_VITEST_TEST).finditer(text):
        said = _next_text_line(text, match.end() + 1)
        tests.append((match.group(1).strip(), said if said.startswith("→") else ""))
    if not tests:
        return None
    name, message = tests[0]
    lines = [line for test, said in tests for line in (f"{_CROSSES[0]} {test}", said)]
    return Salient("vitest", JOIN.join(part for part in (name, message.lstrip("→ ")) if part), _first(lines))


# --- tsc --------------------------------------------------------------------------------

# ``src/a.ts(12,5): error TS2322: ...``, ``src/a.ts:12:5 - error TS2322: ...`` (--pretty),
# ``error TS5058: ...`` (no file).
_TSC = r"^(?:\S.*?(?:\(\d+,\d+\): | - ))?error TS\d+: .*$"


def _tsc(text: str) -> Salient | None:
    if "error TS" not in text:
        return None
    errors = _all(_TSC, text)
    return Salient("tsc", errors[0], _first(errors)) if errors else None


# --- Rust -------------------------------------------------------------------------------

_RUST_PANIC = r"^thread '[^'\n]*' panicked at .*$"
_CARGO_ERROR = r"^error(?:\[E\d+\])?: (?!could not compile|aborting due to|test failed).*$"
_CARGO_LOCATION = r"(?:[^\n]*\n){0,2}?[ \t]*--> (\S+)"


def _rust_panic(text: str) -> Salient | None:
    if "panicked at" not in text:
        return None
    # Since Rust 1.73 the message follows ``panicked at src/lib.rs:10:9:`` on the next line.
    panics = [_continued(text, m) for m in _rx(_RUST_PANIC).finditer(text)]
    return Salient("rust", panics[0], _first(panics)) if panics else None


def _cargo(text: str) -> Salient | None:
    if "error" not in text or "--> " not in text:
        return None
    errors = []
    for match in _rx(_CARGO_ERROR).finditer(text):
        where = _rx(_CARGO_LOCATION).match(text, match.end() + 1)
        errors.append(f"{match.group(0).strip()} --> {where.group(1)}" if where else match.group(0).strip())
    located = [e for e in errors if " --> " in e]
    return Salient("cargo", located[0], _first(errors)) if located else None


# --- go ---------------------------------------------------------------------------------

_GO_PANIC = r"^panic: .*$"
_GO_BUILD = r"^\S+\.go:\d+:\d+: .*$"
_GO_FAIL = r"^[ \t]*--- FAIL: \S+.*$"
_GO_MESSAGE = r"^[ \t]+\S+\.go:\d+: .*$"


def _go(text: str) -> Salient | None:
    if "panic: " in text and (panics := _all(_GO_PANIC, text)):
        return Salient("go", panics[0], _first(panics))
    if ".go:" in text and (built := _all(_GO_BUILD, text)):
        return Salient("go", built[0], _first(built))
    if "--- FAIL" not in text or not (failed := _all(_GO_FAIL, text)):
        return None
    # ``go test -v`` prints a test's messages before its ``--- FAIL`` line, plain ``go test``
    # after it: the first message of the output belongs to the first failing test either way.
    messages = _all(_GO_MESSAGE, text)
    return Salient("go", JOIN.join([failed[0], *messages[:1]]), _first([*failed, *messages]))


# --- node -------------------------------------------------------------------------------

_NODE_FRAME = r"^[ \t]+at \S.*$"
_NODE_ERROR = (
    r"^[ \t]*(?:Uncaught )?(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$]*(?:Error|Exception)\b(?: \[[\w-]+\])?(?::.*)?$"
)


def _node(text: str) -> Salient | None:
    if "    at " not in text and "\tat " not in text:
        return None
    frame = _rx(_NODE_FRAME).search(text)
    if frame is None:
        return None
    errors = [m.group(0).strip() for m in _rx(_NODE_ERROR).finditer(text, 0, frame.start())]
    return Salient("node", errors[-1], (errors[-1], frame.group(0).strip())) if errors else None


# --- anything else ----------------------------------------------------------------------

_LABEL = r"^(?!npm )[^\n]*?(?<![\w.-])(?:error|fatal|fail(?:ed|ure)?)(?:\[[^\]\n]*\])?:[^\n]*$"
_NPM = r"^npm (?:ERR!|error)(?: (.*))?$"
# npm's bookkeeping: true, but none of it says what went wrong.
_NPM_NOISE = (
    r"^(?:$|code\b|errno\b|syscall\b|path\b|dest\b|signal\b|command\b|cwd\b|workspace\b|location\b"
    r"|A complete log\b|\s|/|[A-Za-z]:\\|This is probably\b|Failed at the\b|Exit status\b"
    r"|Tell the author\b|Make sure you\b|You can get\b|Lifecycle script\b|Error: command failed\b"
    r"|in workspace\b|at location\b|Log files were\b)"
)
_PHRASE = (
    r"^[^\n]*(?:command not found|no such file or directory|permission denied|no module named"
    r"|\bcannot\b|\bcan't\b|\bcould not\b|\bunable to\b|\bnot found\b|\bfailed\b|\bfailure\b"
    r"|\*\*\* |\bexception\b|\berror\b)[^\n]*$"
)


def _label(text: str) -> Salient | None:
    # ``Sphinx version error:`` with its message on the next line, as Python's are.
    found = [_continued(text, m) for m in _rx(_LABEL, re.MULTILINE | re.IGNORECASE).finditer(text)]
    return Salient("error", found[0], _first(found)) if found else None


def _npm(text: str) -> Salient | None:
    if "npm " not in text:
        return None
    noise = _rx(_NPM_NOISE, 0)
    said = [m.group(0).strip() for m in _rx(_NPM).finditer(text) if not noise.match(m.group(1) or "")]
    return Salient("npm", said[0], _first(said)) if said else None


def _phrase(text: str) -> Salient | None:
    found = _all(_PHRASE, text, re.MULTILINE | re.IGNORECASE)[::-1]
    return Salient("error", found[0], _first(found)) if found else None


_FINDERS: tuple[Callable[[str], Salient | None], ...] = (
    _lint_guard,  # first: the refused edit's quoted code may hold any other format's lines
    _pytest,
    _python,
    _pytest_summary,
    _jest,
    _vitest,
    _tsc,
    _rust_panic,
    _cargo,
    _go,
    _node,
    _exception,
    _label,
    _npm,
    _phrase,
)


def find(text: str, limit: int = HEADLINE_CHARS) -> Salient:
    """The salient error of ``text``, with a one-line headline of at most ``limit`` characters.

    ``kind`` names the format recognised; ``"line"`` is a one-line text (its own headline),
    ``"text"`` an output in which nothing was recognised (its last line).
    """
    if "\n" not in text and "\r" not in text:
        line = one_line(text[:SCAN_CHARS], limit)
        return Salient("line", line, (line,) if line else ())
    body = scanned(text)
    for finder in _FINDERS:
        found = finder(body)
        if found is not None:
            lines = tuple(flat for line in found.lines if (flat := one_line(line, LINE_CHARS)))
            return Salient(found.kind, one_line(found.headline, limit), lines)
    last = next((flat for line in reversed(body.split("\n")) if (flat := one_line(line, LINE_CHARS))), "")
    return Salient("text", one_line(last, limit), (last,) if last else ())


def headline(text: str, limit: int = HEADLINE_CHARS) -> str:
    """The salient error of ``text`` on one line of at most ``limit`` characters."""
    return find(text, limit).headline
