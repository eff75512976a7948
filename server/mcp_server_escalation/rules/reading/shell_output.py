"""Reading shell output: exit codes, ANSI colour, and test-runner summaries (pure, no I/O).

A test run is a run whose output ends with a summary we recognise; a run without one is
not a test run (it may still be a failure). Summaries are matched by the exact closing
formats of each runner (pytest terminal.py, jest getSummary.ts, vitest getStateString,
go test, rust libtest, mocha's epilogue, rspec's totals line) and the one printed LAST
wins, so a log that quotes another runner's line earlier does not count. Counts:

- ``failed`` is every test that did not pass: failures plus errors (pytest ``error``,
  rspec "errors occurred outside of examples", a go package that failed without a test).
- skipped, pending, todo, deselected, xfailed and warnings are neither passed nor failed.
- go test without ``-v`` prints no passing tests: ``passed`` is then the number of ``ok``
  packages, so fixing one failing test still raises the pass rate.
- cargo prints one ``test result:`` line per test binary; they are summed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import NamedTuple

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_EXIT_LINE = re.compile(r"\AExit code (-?\d+)[ \t]*(?:\r?\n|\Z)")
_TIMED_OUT = re.compile(r"^Command timed out after\b", re.MULTILINE)

# How much of a failing command's output becomes the failure message: the tail, where
# every runner prints its failing checks and its summary (attractor's digest uses the same).
DIGEST_LINES = 30
DIGEST_CHARS = 4096


class RunSummary(NamedTuple):
    """One recognised test summary: the runner and its counts."""

    runner: str
    passed: int
    failed: int
    line: str  # the summary line as printed (ANSI stripped)
    end: int  # where it ends in the text: the last summary wins


@cache
def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


class _Lazy:
    """A pattern compiled at first use: most hook events never read a test summary."""

    __slots__ = ("flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return _compiled(self.pattern, self.flags).finditer(text)

    def findall(self, text: str) -> list[tuple[str, str]]:
        return _compiled(self.pattern, self.flags).findall(text)


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour and cursor sequences, with ``\\n`` line ends."""
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def split_exit_code(error: str) -> tuple[int | None, str]:
    """``("Exit code 1\\nrest")`` -> ``(1, "rest")``; text without that first line -> ``(None, text)``."""
    match = _EXIT_LINE.match(error)
    if match is None:
        return None, error
    return int(match.group(1)), error[match.end() :]


def timed_out(text: str) -> bool:
    """True when the host killed the command for running too long."""
    return _TIMED_OUT.search(text) is not None


def digest(text: str) -> str:
    """The tail of ``text`` (last 30 lines, at most 4096 characters), ANSI stripped."""
    lines = [line.rstrip() for line in strip_ansi(text).strip("\n").split("\n")]
    tail = "\n".join(line for line in lines[-DIGEST_LINES:] if line.strip())
    return tail[-DIGEST_CHARS:].strip()


# pytest: "==== 1 failed, 1 passed, 1 warning in 0.13s ====", "-q" drops the "=";
# long runs add "(0:01:15)". Every noun must be one pytest prints, or it is not pytest's.
_PYTEST = _Lazy(
    r"^=*[ \t]*(?P<body>\d+ [a-z]+(?: [a-z]+)?(?:, \d+ [a-z]+(?: [a-z]+)?)*)"
    r" in [\d.]+s(?: \([\d:.]+\))?[ \t]*=*[ \t]*$",
    re.MULTILINE,
)
_PYTEST_NOUNS = frozenset(
    {
        "failed",
        "passed",
        "skipped",
        "deselected",
        "xfailed",
        "xpassed",
        "warning",
        "warnings",
        "error",
        "errors",
        "subtests passed",
        "subtests failed",
        "subtests skipped",
    }
)
_PART = _Lazy(r"(\d+) ([a-z]+(?: [a-z]+)?)")


def _pytest(text: str) -> RunSummary | None:
    found = None
    for match in _PYTEST.finditer(text):
        parts = {noun: int(n) for n, noun in _PART.findall(match.group("body"))}
        if not parts or not set(parts) <= _PYTEST_NOUNS:
            continue
        failed = parts.get("failed", 0) + parts.get("error", 0) + parts.get("errors", 0)
        found = RunSummary("pytest", parts.get("passed", 0), failed, match.group(0).strip(), match.end())
    return found


# jest closes with a line like  Tests:       1 failed, 2 skipped, 1 todo, 5 passed, 9 total
_JEST = _Lazy(r"^Tests:[ \t]+(?P<body>(?:\d+ [a-z]+, )*)\d+ total[ \t]*$", re.MULTILINE)
_JEST_PART = _Lazy(r"(\d+) (failed|skipped|todo|passed)\b")


def _jest(text: str) -> RunSummary | None:
    matches = list(_JEST.finditer(text))
    if not matches:
        return None
    match = matches[-1]
    parts = {noun: int(n) for n, noun in _JEST_PART.findall(match.group("body"))}
    return RunSummary("jest", parts.get("passed", 0), parts.get("failed", 0), match.group(0), match.end())


# vitest closes with a line like       Tests  1 failed | 2 passed | 1 skipped (4)
_VITEST = _Lazy(
    r"^[ \t]*Tests[ \t]+(?P<body>\d+ [a-z]+(?: \| \d+ [a-z]+)*)[ \t]+\((?P<total>\d+)\)[ \t]*$",
    re.MULTILINE,
)
_VITEST_PART = _Lazy(r"(\d+) (failed|passed|skipped|todo)\b")


def _vitest(text: str) -> RunSummary | None:
    matches = list(_VITEST.finditer(text))
    if not matches:
        return None
    match = matches[-1]
    parts = {noun: int(n) for n, noun in _VITEST_PART.findall(match.group("body"))}
    return RunSummary(
        "vitest", parts.get("passed", 0), parts.get("failed", 0), match.group(0).strip(), match.end()
    )


# go test: "--- FAIL: TestX (0.00s)" (subtests indented), "ok  \tpkg\t0.005s",
# "FAIL\tpkg\t0.12s", "FAIL\tpkg [build failed]", "?   \tpkg\t[no test files]".
_GO_TEST = _Lazy(r"^--- (PASS|FAIL): \S+ \(\d+(?:\.\d+)?s\)", re.MULTILINE)
_GO_PACKAGE = _Lazy(
    r"^(ok|FAIL)[ \t]+\S*[A-Za-z]\S*[ \t]+(?:\d+(?:\.\d+)?s|\(cached\)|\[[^\]\n]+\])(?:[ \t].*)?$",
    re.MULTILINE,
)


def _go(text: str) -> RunSummary | None:
    events = sorted(
        [(m.start(), m.end(), "test", m.group(1), m.group(0)) for m in _GO_TEST.finditer(text)]
        + [(m.start(), m.end(), "package", m.group(1), m.group(0)) for m in _GO_PACKAGE.finditer(text)]
    )
    if not any(kind == "package" for _s, _e, kind, _v, _l in events):
        return None
    passed_tests = failed = ok_packages = failing_in_package = 0
    end, line = 0, ""
    for _start, stop, kind, verdict, text_line in events:
        if kind == "test":
            if verdict == "PASS":
                passed_tests += 1
            else:
                failed += 1
                failing_in_package += 1
            continue
        if verdict == "ok":
            ok_packages += 1
        elif failing_in_package == 0:
            failed += 1  # a package that failed without a failing test: build, panic, setup
        failing_in_package = 0
        end, line = stop, text_line
    passed = passed_tests if passed_tests else ok_packages
    return RunSummary("go", passed, failed, line.strip(), end)


# cargo test: one line per test binary, summed.
_CARGO = _Lazy(
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; \d+ ignored; \d+ measured; "
    r"\d+ filtered out",
    re.MULTILINE,
)


def _cargo(text: str) -> RunSummary | None:
    matches = list(_CARGO.finditer(text))
    if not matches:
        return None
    passed = sum(int(m.group(1)) for m in matches)
    failed = sum(int(m.group(2)) for m in matches)
    return RunSummary("cargo", passed, failed, matches[-1].group(0), matches[-1].end())


# mocha: "  3 passing (12ms)", "  1 pending", "  2 failing"
_MOCHA_PASSING = _Lazy(r"^[ \t]*(\d+) passing\b.*$", re.MULTILINE)
_MOCHA_FAILING = _Lazy(r"^[ \t]*(\d+) failing\b.*$", re.MULTILINE)


def _mocha(text: str) -> RunSummary | None:
    passing = list(_MOCHA_PASSING.finditer(text))
    if not passing:
        return None
    last = passing[-1]
    failing = [m for m in _MOCHA_FAILING.finditer(text) if m.start() > last.start()]
    end = failing[0].end() if failing else last.end()
    failed = int(failing[0].group(1)) if failing else 0
    return RunSummary("mocha", int(last.group(1)), failed, last.group(0).strip(), end)


# rspec closes with a line like  3 examples, 1 failure, 1 pending  (newer versions may add
# ", 1 error occurred outside of examples")
_RSPEC = _Lazy(
    r"^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?"
    r"(?:, (\d+) errors? occurred outside of examples)?[ \t]*$",
    re.MULTILINE,
)


def _rspec(text: str) -> RunSummary | None:
    matches = list(_RSPEC.finditer(text))
    if not matches:
        return None
    m = matches[-1]
    examples, failures = int(m.group(1)), int(m.group(2))
    pending, errors = int(m.group(3) or 0), int(m.group(4) or 0)
    return RunSummary("rspec", max(examples - failures - pending, 0), failures + errors, m.group(0), m.end())


_PARSERS: tuple[Callable[[str], RunSummary | None], ...] = (
    _pytest,
    _jest,
    _vitest,
    _go,
    _cargo,
    _mocha,
    _rspec,
)


def parse_summary(output: str) -> RunSummary | None:
    """The last test summary printed in ``output``, or None (no summary: not a test run).

    A summary that counts no passed and no failed test (``no tests ran``, ``0 examples``)
    is not a test run either: the store needs at least one test to compute a pass rate.
    """
    text = strip_ansi(output)
    found = [s for s in (parse(text) for parse in _PARSERS) if s is not None]
    if not found:
        return None
    # The latest summary wins; on a tie (one line read by two parsers) the first parser.
    best = max(found, key=lambda s: s.end)
    return best if best.passed + best.failed > 0 else None
