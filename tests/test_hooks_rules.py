"""The pure parts of the hooks: test summaries, commands, payload reading, the plan, answers."""

from __future__ import annotations

import pytest

from hooks_support import (
    CARGO_FAIL,
    GO_FAIL,
    JEST_FAIL,
    MOCHA_FAIL,
    PROJECT,
    PYTEST_FAIL,
    PYTEST_PASS,
    RSPEC_FAIL,
    RUNNERS,
    VITEST_FAIL,
    bash_failure,
    claude,
    cursor,
    post_bash,
    post_edit,
)
from mcp_server_escalation.hooks import claude_code
from mcp_server_escalation.hooks import cursor as cursor_host
from mcp_server_escalation.hooks.events import Answer, own_tool, tool_kind
from mcp_server_escalation.hooks.plan import Rules, plan_post
from mcp_server_escalation.hooks.protocol import encode_answer, parse_payload
from mcp_server_escalation.rules.reading.commands import (
    DEFAULT_TEST_COMMAND,
    is_read_only_command,
    is_test_command,
)
from mcp_server_escalation.rules.reading.salient import headline
from mcp_server_escalation.rules.reading.shell_output import (
    digest,
    parse_summary,
    split_exit_code,
    strip_ansi,
)

RULES = Rules(test_command=DEFAULT_TEST_COMMAND)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_each_runners_closing_summary_gives_its_counts(runner: str) -> None:
    _command, output, passed, failed = RUNNERS[runner]
    summary = parse_summary(output)
    assert summary is not None
    assert (summary.runner, summary.passed, summary.failed) == (runner, passed, failed)


def test_summaries_count_errors_as_failures_and_ignore_skips() -> None:
    quiet = parse_summary("1 failed, 2 passed, 3 skipped, 1 warning, 2 errors in 0.05s")
    assert quiet is not None
    assert (quiet.passed, quiet.failed) == (2, 3)
    assert parse_summary(PYTEST_PASS).failed == 0  # type: ignore[union-attr]
    rspec = parse_summary("5 examples, 1 failure, 2 pending, 1 error occurred outside of examples")
    assert rspec is not None
    assert (rspec.passed, rspec.failed) == (2, 2)


def test_cargo_sums_every_test_binary_and_go_counts_tests_with_v() -> None:
    two = CARGO_FAIL + "\ntest result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    assert parse_summary(two).passed == 6  # type: ignore[union-attr]
    verbose = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- PASS: TestB (0.00s)\n" + GO_FAIL
    go = parse_summary(verbose)
    assert go is not None
    assert (go.passed, go.failed) == (2, 1)
    build = parse_summary(
        "# example.com/calc\n./calc.go:3:1: syntax error\nFAIL\texample.com/calc [build failed]\n"
    )
    assert build is not None
    assert (build.passed, build.failed) == (0, 1)


def test_the_last_summary_printed_wins() -> None:
    combined = PYTEST_FAIL + "\n" + JEST_FAIL
    assert parse_summary(combined).runner == "jest"  # type: ignore[union-attr]
    assert parse_summary(JEST_FAIL + "\n" + PYTEST_PASS).runner == "pytest"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "output",
    [
        "hello world",
        "no tests ran in 0.01s",
        "0 examples, 0 failures",
        "ok 1 - adds\nok 2 - subtracts\n# pass 2",  # TAP is not go test
        "compiled 3 files in 0.5s",  # not pytest's nouns
        "Tests: pending",
    ],
)
def test_output_without_a_recognisable_summary_is_not_a_test_run(output: str) -> None:
    assert parse_summary(output) is None


def test_colour_codes_do_not_hide_a_summary() -> None:
    assert strip_ansi("\x1b[31m1 failed\x1b[0m") == "1 failed"
    coloured = parse_summary("\x1b[31m1 failed\x1b[0m, \x1b[32m2 passed\x1b[0m in 0.13s\r\n")
    assert coloured is not None
    assert (coloured.passed, coloured.failed) == (2, 1)


def test_the_exit_code_line_is_split_off_the_error_text() -> None:
    assert split_exit_code("Exit code 1\nError: Cannot find module 'express'") == (
        1,
        "Error: Cannot find module 'express'",
    )
    assert split_exit_code("Exit code 137") == (137, "")
    assert split_exit_code("spawn /bin/sh ENOENT") == (None, "spawn /bin/sh ENOENT")
    assert split_exit_code("Exit code one\nx") == (None, "Exit code one\nx")


def test_the_failure_message_is_the_tail_of_the_output() -> None:
    long = "\n".join(f"line {i}" for i in range(100))
    tail = digest(long)
    assert tail.splitlines()[0] == "line 70"
    assert tail.splitlines()[-1] == "line 99"
    assert len(digest("x" * 10_000)) == 4096
    assert digest(PYTEST_FAIL).endswith("1 failed, 2 passed in 0.13s ==========================")


def test_a_failure_message_keeps_the_error_that_warnings_pushed_out_of_its_tail() -> None:
    warnings = "".join(f"  /env/lib/pkg_resources.py:{n}: DeprecationWarning: call {n}\n" for n in range(40))
    output = (
        "    def test_comma():\n"
        ">       assert parse('1,5') == 1.5\n"
        "E       AssertionError: assert 15 == 1.5\n\n"
        "tests/test_parse.py:12: AssertionError\n"
        f"{warnings}"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_parse.py::test_comma - AssertionError: assert 1...\n"
        "========================= 1 failed, 3 passed in 0.12s ==========================\n"
    )
    event = parse_payload(bash_failure("pytest tests/test_parse.py", output, "toolu_w"))
    planned = plan_post(event, "shell", PROJECT, RULES)
    assert planned.failure is not None
    assert "AssertionError: assert 15 == 1.5" not in digest(output)  # the tail alone lost it
    assert headline(planned.failure.message) == "AssertionError: assert 15 == 1.5"
    assert planned.failure.message.endswith(digest(output))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm test", True),
        ("pnpm run test -- --watch=false", True),
        ("python -m pytest -q tests/test_calc.py", True),
        ("uv run pytest", True),
        ("go test ./...", True),
        ("cargo nextest run", True),
        ("bundle exec rspec", True),
        ("make test", True),
        ("npm run build", False),
        ("cat pytest.ini", True),  # names the runner: detection is by command, the summary decides
        ("pytestify src", False),
    ],
)
def test_test_commands_are_detected_by_the_runner_they_name(command: str, expected: bool) -> None:
    assert is_test_command(command) is expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la src", True),
        ("cat src/app.py | head -40", True),
        ("grep -rn 'def add' src 2>/dev/null", True),
        ("rg TODO --type py", True),
        ("git status && git diff HEAD~1", True),
        ("git -C sub log --oneline -5", True),
        ("sed -n 1,20p src/app.py", True),
        ("find . -name '*.py' -newer setup.cfg", True),
        ("cd src && ls", True),
        ("wc -l < src/app.py", True),
        ("sed -i s/a/b/ src/app.py", False),
        ("find . -name '*.pyc' -delete", False),
        ("echo hi > notes.txt", False),
        ("cat $(which python)", False),
        ("ls; rm -rf build", False),
        ("git commit -am wip", False),
        ("git branch -D old", False),
        ("sort -o out.txt in.txt", False),
        ("FOO=1 ls", False),
        ("(cd src && ls)", False),
        ("sleep 100 &", False),
        ("python script.py", False),
        ("cat <<EOF\nx\nEOF", False),
        ('echo "unterminated', False),
        ("", False),
    ],
)
def test_read_only_commands_are_recognised_conservatively(command: str, expected: bool) -> None:
    assert is_read_only_command(command) is expected


def test_configured_read_only_programs_are_added() -> None:
    assert not is_read_only_command("tokei src")
    assert is_read_only_command("tokei src", extra=("tokei",))


def test_tools_are_classified_and_only_our_own_mcp_tools_are_ours() -> None:
    servers = ["escalation"]
    assert tool_kind("Edit", servers=servers) == "edit"
    assert tool_kind("NotebookEdit", servers=servers) == "edit"
    assert tool_kind("Bash", servers=servers) == "shell"
    assert tool_kind("Read", servers=servers) == "read"
    assert tool_kind("mcp__escalation__get_escalation", servers=servers) == "own"
    assert tool_kind("mcp__plugin_tools_escalation__acknowledge_response", servers=servers) == "own"
    assert tool_kind("MCP:acknowledge_response", servers=servers) == "own"
    assert tool_kind("mcp__github__create_pull_request", servers=servers) == "other"
    assert tool_kind("mcp__escalation__delete_everything", servers=servers) == "other"
    assert tool_kind("mcp__evil_escalation__get_escalation", servers=servers) == "other"
    assert tool_kind("Agent", servers=servers) == "other"
    for host_side in (
        "ToolSearch",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
        "tool_search",
        "read_mcp_resource",
    ):
        assert tool_kind(host_side, servers=servers) == "read", host_side
    assert tool_kind("CustomViewer", servers=servers, read_only=["CustomViewer"]) == "read"
    assert not own_tool("mcp__escalation__", servers)


def test_a_claude_failure_payload_is_read_with_its_exit_code() -> None:
    event = claude_code.parse(bash_failure("npm test", "Error: Cannot find module 'express'"))
    assert (event.kind, event.tool_name, event.command, event.exit_code) == (
        "post_tool_failure",
        "Bash",
        "npm test",
        1,
    )
    assert event.output == "Error: Cannot find module 'express'"
    assert event.tool_use_id == "toolu_01FAIL"


def test_wrong_types_in_a_payload_are_treated_as_absent() -> None:
    hostile = claude(
        "PostToolUse",
        tool_name=["Bash"],
        tool_input="not an object",
        tool_response={"stdout": 42, "interrupted": "yes"},
        session_id={"a": 1},
        tool_use_id=None,
    )
    event = claude_code.parse(hostile)
    assert (event.tool_name, event.command, event.output, event.session_id, event.interrupted) == (
        None,
        None,
        None,
        None,
        False,
    )


def test_cursor_payloads_are_recognised_and_read_defensively() -> None:
    post = cursor(
        "postToolUse",
        tool_name="Shell",
        tool_input={"command": "npm test", "working_directory": PROJECT},
        tool_output='{"exitCode":1,"stdout":"Tests:       1 failed, 4 passed, 5 total"}',
        tool_use_id="call_1",
        cwd=PROJECT,
        duration=812,
    )
    assert cursor_host.looks_like_cursor(post)
    event = parse_payload(post)
    assert (event.host, event.kind, event.exit_code, event.session_id, event.generation_id) == (
        "cursor",
        "post_tool",
        1,
        "conv-7f3a",
        "gen-0001",
    )
    assert event.output == "Tests:       1 failed, 4 passed, 5 total"
    edit = parse_payload(cursor("afterFileEdit", file_path=f"{PROJECT}/src/a.py", edits=[]))
    assert (edit.kind, edit.tool_name, edit.file_path, edit.source) == (
        "post_tool",
        "Write",
        f"{PROJECT}/src/a.py",
        "after",
    )
    shell = parse_payload(cursor("beforeShellExecution", command="rm -rf build", cwd=PROJECT, sandbox=False))
    assert (shell.kind, shell.tool_name, shell.command) == ("pre_tool", "Shell", "rm -rf build")
    # Cursor running a .claude/settings.json hook may use Claude's event names.
    assert parse_payload(cursor("PreToolUse", tool_name="Shell")).kind == "pre_tool"
    assert not cursor_host.looks_like_cursor(post_bash("ls", ""))


def test_a_finished_call_maps_to_the_documented_service_calls() -> None:
    def plan(payload: dict[str, object], rules: Rules = RULES) -> tuple[str, object, object]:
        event = parse_payload(payload)
        kind = tool_kind(event.tool_name, servers=["escalation"])
        result = plan_post(event, kind, PROJECT, rules)
        return result.why, result.failure, result.progress

    why, failure, progress = plan(post_edit(f"{PROJECT}/src/app.py"))
    assert (why, failure) == ("edit", None)
    assert progress.files_modified == (f"{PROJECT}/src/app.py",)  # type: ignore[attr-defined]

    why, failure, progress = plan(post_bash("python -m pytest -q", PYTEST_PASS))
    assert (why, failure) == ("test run", None)
    assert (progress.tests_passed, progress.tests_failed, progress.outcome, progress.attempt) == (  # type: ignore[attr-defined]
        3,
        0,
        "success",
        True,
    )

    # A failing run piped through tail exits 0, and is still a failure and a test run.
    why, failure, progress = plan(post_bash("pytest | tail -5", PYTEST_FAIL))
    assert why == "failure and test run"
    assert failure.error_code is None  # type: ignore[attr-defined]
    assert progress.outcome == "failure"  # type: ignore[attr-defined]

    why, failure, progress = plan(post_bash("npm run build", "built in 2.1s"))
    assert (why, failure, progress.outcome, progress.attempt) == (
        "successful command",
        None,
        "success",
        False,
    )  # type: ignore[attr-defined]
    counted = Rules(test_command=DEFAULT_TEST_COMMAND, attempts=frozenset({"test_run", "command"}))
    assert plan(post_bash("npm run build", "ok"), counted)[2].attempt is True  # type: ignore[attr-defined]

    for reading in (
        post_bash("grep -rn add src", "src/calc.py:1:def add"),
        claude("PostToolUse", tool_name="Read"),
    ):
        assert plan(reading)[1:] == (None, None)
    assert plan(claude("PostToolUse", tool_name="mcp__escalation__report_progress"))[1:] == (None, None)
    assert plan(bash_failure("cat missing.txt", "cat: missing.txt: No such file or directory"))[1:] == (
        None,
        None,
    )

    why, failure, progress = plan(bash_failure("npm test", "Command timed out after 2m 0s", code=143))
    assert (failure.signal_type, failure.error_code, progress) == ("timeout", "exit 143", None)  # type: ignore[attr-defined]

    outside = post_edit("/home/user/.claude/plans/plan.md")
    assert plan(outside)[1:] == (None, None)
    gated = Rules(test_command=DEFAULT_TEST_COMMAND, outside_project="gate")
    assert plan(outside, gated)[2] is not None

    after = cursor("afterShellExecution", command="npm run build", output="done", duration=10)
    assert plan(after)[1:] == (None, None)  # no exit code, no summary: nothing to say
    interrupted = {**bash_failure("npm test", "x"), "is_interrupt": True}
    assert plan(interrupted)[1:] == (None, None)
    refused = cursor("postToolUseFailure", tool_name="Shell", tool_input={"command": "npm i"},
                     error_message="denied", failure_type="permission_denied")  # fmt: skip
    assert plan(refused)[1:] == (None, None)


def test_answers_take_each_hosts_shape() -> None:
    pre = parse_payload(claude("PreToolUse", tool_name="Edit"))
    assert encode_answer(Answer(deny="no"), pre, "claude-code") == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        }
    }
    assert encode_answer(Answer(), pre, "claude-code") is None
    halted = encode_answer(Answer(deny="no", halt="stop"), pre, "claude-code")
    assert halted is not None
    assert (halted["continue"], halted["stopReason"]) == (False, "stop")
    stop = parse_payload(claude("Stop"))
    assert encode_answer(Answer(block="fix"), stop, "claude-code") == {"decision": "block", "reason": "fix"}
    c_pre = parse_payload(cursor("preToolUse", tool_name="Write"))
    assert encode_answer(Answer(deny="no"), c_pre, "cursor") == {
        "permission": "deny",
        "user_message": "no",
        "agent_message": "no",
    }
    both = encode_answer(Answer(deny="no"), c_pre, "claude-code")
    assert both is not None
    assert both["permission"] == "deny"
    assert both["hookSpecificOutput"]["permissionDecision"] == "deny"
    c_stop = parse_payload(cursor("stop", status="completed", loop_count=0))
    assert encode_answer(Answer(block="fix"), c_stop, "cursor") == {"followup_message": "fix"}
    long = encode_answer(Answer(deny="x" * 20_000), pre, "claude-code")
    assert long is not None
    assert len(long["hookSpecificOutput"]["permissionDecisionReason"]) <= 10_000


def test_runner_outputs_are_realistic_enough_to_classify() -> None:
    # The fixtures are used by the subprocess tests; keep them honest about their counts.
    for name in (JEST_FAIL, VITEST_FAIL, MOCHA_FAIL, RSPEC_FAIL, GO_FAIL):
        assert parse_summary(name) is not None
