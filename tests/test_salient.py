"""The salient error line of a tool output (rules/reading/salient.py), on real and hand-written outputs.

The real outputs are tests/data/salient_corpus.json: failing commands of 250 real agent
runs (its ``source`` says where from); their expected headlines were checked by eye. The
other runners' outputs (jest, vitest, tsc, go, cargo, npm, node) are written as each prints
them; the data holds Python projects only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hooks_support import CARGO_FAIL, GO_FAIL, JEST_FAIL, MOCHA_FAIL, PYTEST_FAIL, VITEST_FAIL
from mcp_server_escalation.rules.reading.salient import (
    HEADLINE_CHARS,
    LINE_CHARS,
    SALIENT_LINES,
    SCAN_CHARS,
    SCAN_LINES,
    find,
    headline,
    one_line,
    scanned,
)

CORPUS = json.loads((Path(__file__).parent / "data" / "salient_corpus.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = CORPUS["cases"]


def test_the_corpus_is_small_and_says_where_it_comes_from() -> None:
    assert (Path(__file__).parent / "data" / "salient_corpus.json").stat().st_size < 200_000
    assert "trajectories-dev.jsonl.gz" in CORPUS["source"]
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[f"{c['run']}-{c['step']}" for c in CASES])
def test_a_real_failing_output_is_summarised_by_its_error_line(case: dict[str, Any]) -> None:
    found = find(case["output"])
    assert found.headline == case["headline"]
    # Not invented: the headline is the output's own words (clipped), never a banner.
    assert found.headline.removesuffix("…") in one_line(case["output"], 10**6)
    assert not found.headline.startswith(("Traceback (most recent call last)", "==", "> ", "platform "))


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        # A chained traceback: the last exception ended the program.
        (
            "sympy__sympy-17655",
            "sympy.geometry.exceptions.GeometryError: "
            "Don't know how to add 2.0*Point2D(1, 1) and a Point object",
        ),
        # The program's own DEBUG lines printed between the frames.
        ("django__django-15695", "NameError: name 'old_index_name' is not defined"),
        # Sphinx prints its frames under "Exception occurred:" without the Traceback banner.
        ("sphinx-doc__sphinx-8035", "AttributeError: 'list' object has no attribute 'split'"),
        # Django's test runner: the traceback is followed by lines of teardown noise.
        (
            "django__django-11433",
            "UnicodeEncodeError: 'ascii' codec can't encode characters in position 39-47: "
            "ordinal not in range(128)",
        ),
        # A SyntaxError's frame has no function; the caret line comes between.
        ("django__django-13807", "SyntaxError: invalid syntax"),
    ],
)
def test_the_tracebacks_python_prints_give_their_final_exception_line(run: str, expected: str) -> None:
    case = next(c for c in CASES if c["run"] == run and c["headline"] == expected)
    found = find(case["output"])
    assert (found.kind, found.headline) == ("python", expected)
    assert found.lines[1].startswith('File "')  # the innermost frame comes with it


def test_a_traceback_gives_its_error_not_its_banner() -> None:
    output = (
        "Traceback (most recent call last):\n"
        '  File "/app/shop/cart.py", line 41, in <module>\n'
        "    main()\n"
        '  File "/app/shop/cart.py", line 12, in main\n'
        "    total = price(item)\n"
        "            ^^^^^^^^^^^\n"
        "TypeError:\n"
        "  price() needs a currency\n"
    )
    found = find(output)
    assert found.headline == "TypeError: price() needs a currency"
    assert found.lines == (
        "TypeError: price() needs a currency",
        'File "/app/shop/cart.py", line 12, in main',
    )


def test_pytest_gives_the_first_e_line_with_its_location_and_summary() -> None:
    found = find(PYTEST_FAIL)
    assert found.headline == "assert 3 == 4"
    assert found.lines == (
        "assert 3 == 4",
        "tests/test_calc.py:9: AssertionError",
        "FAILED tests/test_calc.py::test_add - assert 3 == 4",
    )


def test_pytest_without_tracebacks_gives_its_short_summary() -> None:
    output = (
        "..F.F\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_cart.py::test_total - KeyError: 'eur'\n"
        "FAILED tests/test_cart.py::test_empty - AssertionError: assert 1 == 0\n"
        "========================= 2 failed, 3 passed in 0.21s ==========================\n"
    )
    assert headline(output) == "FAILED tests/test_cart.py::test_total - KeyError: 'eur'"


def test_a_summary_cut_short_gives_way_to_the_whole_error_it_abbreviates() -> None:
    output = (
        "AssertionError: assert 'foo()' in ['', 'module']\n"
        "  /testbed/pkg/__init__.py:3154: DeprecationWarning: Deprecated call\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_all.py::test_missing_all - AssertionError...\n"
        "FAILED tests/test_all.py::test_not_empty_all - AssertionErr...\n"
        "=================== 2 failed, 1 passed, 7 warnings in 0.24s ====================\n"
    )
    assert headline(output) == "AssertionError: assert 'foo()' in ['', 'module']"
    alone = "FAILED tests/test_all.py::test_missing_all - AssertionError...\n= 1 failed in 0.1s =\n"
    assert headline(alone) == "FAILED tests/test_all.py::test_missing_all - AssertionError..."


def test_an_e_block_cut_at_the_top_does_not_give_a_continuation_line() -> None:
    output = (
        "E           and: 'collected 0 items'\n"
        "E       remains unmatched: '*2 passed*'\n"
        "\n"
        "testing/test_collection.py:1236: Failed\n"
        "=========================== short test summary info ============================\n"
        "FAILED testing/test_collection.py::test_collect_sub - Failed: nomatch: '*2 passed*'\n"
    )
    assert (
        headline(output)
        == "FAILED testing/test_collection.py::test_collect_sub - Failed: nomatch: '*2 passed*'"
    )


def test_colour_codes_are_stripped() -> None:
    output = (
        ">       self.hdul.close()\n"
        "\x1b[1m\x1b[31mE       AttributeError: 'Cart' object has no attribute 'hdul'\x1b[0m\n"
        "\n"
        "\x1b[1m\x1b[31mtests/test_cart.py\x1b[0m:31: AttributeError\n"
    )
    found = find(output)
    assert found.headline == "AttributeError: 'Cart' object has no attribute 'hdul'"
    assert found.lines[1] == "tests/test_cart.py:31: AttributeError"


TSC_FAIL = """\

> shop@1.4.0 build
> tsc -p .

src/cart.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.
src/api.ts(3,10): error TS2305: Module '"./types"' has no exported member 'Order'.

npm ERR! code ELIFECYCLE
npm ERR! errno 2
npm ERR! shop@1.4.0 build: `tsc -p .`
npm ERR! Exit status 2
npm ERR!
npm ERR! Failed at the shop@1.4.0 build script.
npm ERR! This is probably not a problem with npm. There is likely additional logging output above.

npm ERR! A complete log of this run can be found in:
npm ERR!     /root/.npm/_logs/2026-11-21T10_00_00_000Z-debug.log
"""
TSC_PRETTY = """\
src/cart.ts:12:5 - error TS2322: Type 'string' is not assignable to type 'number'.

12     total = "0";
       ~~~~~

Found 1 error in src/cart.ts:12
"""
NPM_MISSING_SCRIPT = """\
npm ERR! Missing script: "build"
npm ERR!
npm ERR! To see a list of scripts, run:
npm ERR!   npm run

npm ERR! A complete log of this run can be found in:
npm ERR!     /root/.npm/_logs/2026-11-21T10_00_00_000Z-debug-0.log
"""
NPM_ERESOLVE = """\
npm ERR! code ERESOLVE
npm ERR! ERESOLVE unable to resolve dependency tree
npm ERR!
npm ERR! While resolving: shop@1.4.0
npm ERR! Found: react@18.2.0
"""
NODE_CRASH = """\

> shop@1.4.0 build
> node build.js

node:internal/modules/cjs/loader:1080
  throw err;
  ^

Error: Cannot find module 'esbuild'
Require stack:
- /app/build.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15)
    at Module._load (node:internal/modules/cjs/loader:922:27)
    at Object.<anonymous> (/app/build.js:1:17) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/app/build.js' ]
}

Node.js v18.19.0
"""
GO_BUILD = """\
# example.com/calc
./calc.go:12:9: undefined: Sub
./calc.go:15:2: declared and not used: x
FAIL\texample.com/calc [build failed]
FAIL
"""
GO_VERBOSE = """\
=== RUN   TestAdd
    calc_test.go:9: add(1, 2) = 3, want 4
--- FAIL: TestAdd (0.00s)
=== RUN   TestSub
--- PASS: TestSub (0.00s)
FAIL
exit status 1
FAIL\texample.com/calc\t0.004s
"""
GO_PANIC = """\
panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.main()
\t/app/main.go:8 +0x1d
exit status 2
"""
CARGO_BUILD = """\
   Compiling shop v0.1.0 (/app)
error[E0308]: mismatched types
 --> src/main.rs:4:18
  |
4 |     let x: i32 = "five";
  |            ---   ^^^^^^ expected `i32`, found `&str`
  |            |
  |            expected due to this

For more information about this error, try `rustc --explain E0308`.
error: could not compile `shop` (bin "shop") due to 1 previous error
"""
RUST_OLD_PANIC = """\
thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:3:37
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
"""


@pytest.mark.parametrize(
    ("output", "kind", "expected"),
    [
        (JEST_FAIL, "jest", "calc \u203a adds | expect(received).toBe(expected) // Object.is equality"),
        (VITEST_FAIL, "vitest", "calc > adds | expected 3 to be 4 // Object.is equality"),
        (MOCHA_FAIL, "node", "AssertionError [ERR_ASSERTION]: 3 == 4"),
        (
            TSC_FAIL,
            "tsc",
            "src/cart.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.",
        ),
        (
            TSC_PRETTY,
            "tsc",
            "src/cart.ts:12:5 - error TS2322: Type 'string' is not assignable to type 'number'.",
        ),
        (NPM_MISSING_SCRIPT, "npm", 'npm ERR! Missing script: "build"'),
        (NPM_ERESOLVE, "npm", "npm ERR! ERESOLVE unable to resolve dependency tree"),
        (NODE_CRASH, "node", "Error: Cannot find module 'esbuild'"),
        (GO_FAIL, "go", "--- FAIL: TestAdd (0.00s) | calc_test.go:9: add(1, 2) = 3, want 4"),
        (GO_VERBOSE, "go", "--- FAIL: TestAdd (0.00s) | calc_test.go:9: add(1, 2) = 3, want 4"),
        (GO_BUILD, "go", "./calc.go:12:9: undefined: Sub"),
        (GO_PANIC, "go", "panic: runtime error: index out of range [5] with length 3"),
        (CARGO_BUILD, "cargo", "error[E0308]: mismatched types --> src/main.rs:4:18"),
        (
            CARGO_FAIL,
            "rust",
            "thread 'tests::adds' panicked at src/lib.rs:12:9: assertion `left == right` failed",
        ),
        (
            RUST_OLD_PANIC,
            "rust",
            "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:3:37",
        ),
    ],
    ids=[
        "jest",
        "vitest",
        "mocha",
        "tsc",
        "tsc-pretty",
        "npm-missing-script",
        "npm-eresolve",
        "node",
        "go-test",
        "go-test-v",
        "go-build",
        "go-panic",
        "cargo-build",
        "cargo-test",
        "rust-panic-before-1.73",
    ],
)
def test_other_runners_give_their_error_line_not_their_banner(output: str, kind: str, expected: str) -> None:
    found = find(output)
    assert (found.kind, found.headline) == (kind, expected)
    assert "> shop@1.4.0 build" not in found.headline


def test_more_failures_than_a_summary_keeps_give_the_first_few() -> None:
    output = "\n".join(f"src/f{n}.ts({n},1): error TS2304: Cannot find name 'x{n}'." for n in range(40))
    found = find(output)
    assert found.headline == "src/f0.ts(0,1): error TS2304: Cannot find name 'x0'."
    assert len(found.lines) == SALIENT_LINES


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "gcc -o app main.c\nmain.c:3:1: error: expected ';' before '}' token\nmake: *** [all] Error 1\n",
            "main.c:3:1: error: expected ';' before '}' token",
        ),
        (
            "Running Sphinx v4.1.0\nSphinx version error:\nThis project needs Sphinx v5.0\n",
            "Sphinx version error: This project needs Sphinx v5.0",
        ),
        (
            "rm: cannot remove 'a.txt': No such file or directory\ncat: b.txt: No such file or directory\n",
            "cat: b.txt: No such file or directory",
        ),
        (
            "collected 100 items / 100 deselected\n\n==== 100 deselected in 2.25s ====\n",
            "==== 100 deselected in 2.25s ====",
        ),
    ],
    ids=["compiler-first-error", "label-continued", "shell-last-command", "nothing-recognised-last-line"],
)
def test_other_output_gives_an_error_line_or_else_its_last_line(output: str, expected: str) -> None:
    assert headline(output) == expected


def test_a_one_line_message_is_its_own_headline() -> None:
    assert headline("KeyError: 'next_url'") == "KeyError: 'next_url'"
    assert headline("  spaced \t out  ") == "spaced out"


def test_a_headline_is_clipped_to_its_limit_with_an_ellipsis() -> None:
    assert headline("ValueError: " + "x" * 500) == "ValueError: " + "x" * (HEADLINE_CHARS - 13) + "…"
    assert len(headline("Traceback:\n" + "ValueError: " + "x" * 5000, 50)) == 50


def test_a_huge_output_is_read_only_at_its_tail() -> None:
    traceback = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nKeyError: 1\n'
    noise = "".join(f"line {n} of noise\n" for n in range(70_000))  # ~1.2 MB
    # What comes after 32 KiB of noise is found; an error 1 MB up is out of reach by design.
    assert headline(noise + traceback) == "KeyError: 1"
    assert headline(traceback + noise) == "line 69999 of noise"
    body = scanned(traceback + noise)
    assert len(body) <= SCAN_CHARS
    assert body.count("\n") < SCAN_LINES
    assert headline("y" * 1024 * 1024) == "y" * (HEADLINE_CHARS - 1) + "…"
    assert all(len(line) <= LINE_CHARS for line in scanned("z" * 100_000 + "\n" + "w" * 10_000).split("\n"))


def test_a_huge_line_is_cut_where_the_scan_starts() -> None:
    # The scan's first line is the end of a longer one; it is not taken for a line.
    text = "Error: " + "q" * SCAN_CHARS + "\nall done\n"
    assert headline(text) == "all done"


# Fragments that make the finders work: banners, frames, markers, control characters.
_FRAGMENTS = st.sampled_from(
    [
        "\n",
        "\r\n",
        "\r",
        "\x1b[31m",
        "\x00",
        "\u2028",
        "\x85",
        "Traceback (most recent call last):\n",
        '  File "a.py", line 3, in f\n',
        "TypeError:",
        "E       ",
        "FAILED a.py::t - ",
        "  ● ",
        " \u00d7 ",
        "\u2192 ",
        "error TS2322: ",
        "error[E0308]: ",
        " --> src/main.rs:1:1",
        "thread 'main' panicked at ",
        "panic: ",
        "--- FAIL: T ",
        "    at f (a.js:1:1)",
        "npm ERR! ",
        "error:",
        "failed",
        " ",
        "x" * 300,
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(st.one_of(_FRAGMENTS, st.text(max_size=40)), max_size=40),
    limit=st.integers(min_value=0, max_value=300),
)
@example(parts=["\n", "\x1b"], limit=0)  # a last line of control characters only: no line
def test_any_input_gives_one_bounded_line(parts: list[str], limit: int) -> None:
    text = "".join(parts)
    found = find(text, limit)
    assert len(found.headline) <= limit
    assert len(found.headline.splitlines()) <= 1
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in found.headline)
    assert len(found.lines) <= SALIENT_LINES
    assert all(0 < len(line) <= LINE_CHARS and len(line.splitlines()) == 1 for line in found.lines)
    # A headline summarised again stays what it is (a summary of a summary is the same).
    assert find(found.headline, limit).headline == found.headline
