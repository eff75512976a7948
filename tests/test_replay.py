"""The replay of real agent runs through the hook path (benchmarks/replay_trajectories.py),
on a slice of the development set kept in the repository (tests/data/README.md)."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import replay_trajectories as replay  # noqa: E402
from hooks_support import daemons_of, stop_daemons  # noqa: E402
from mcp_server_escalation.rules.reading.salient import headline  # noqa: E402

SLICE = ROOT / "tests" / "data" / "trajectories-slice.jsonl.gz"


def _replayed(tmp_path: Path, config: str | None = None) -> dict[str, replay.Replayed]:
    runs = asyncio.run(replay.replay(SLICE, tmp_path, config, None))
    return {r.run: r for r in runs}


def test_real_runs_pause_only_where_one_failure_repeats(tmp_path: Path) -> None:
    runs = _replayed(tmp_path)
    paused = {name: r.pause for name, r in runs.items() if r.pause is not None}
    assert set(paused) == {"django__django-15695"}
    stuck = paused["django__django-15695"]
    assert stuck.types == ("repeated_error",)
    # The headline is the error itself, as the output printed it.
    assert stuck.error_line is not None
    assert replay.carries(stuck.headline, stuck.error_line)
    # The model was warned before the pause.
    assert runs["django__django-15695"].warnings[0] < stuck.step


def test_the_same_runs_paused_at_once_on_missing_modules_with_the_old_blocker_rule(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[thresholds]\nblocker_repeated = 1\n", encoding="utf-8")
    runs = _replayed(tmp_path, str(config))
    blocked = {name for name, r in runs.items() if r.pause and r.pause.types[0] == "external_blocker"}
    assert {"astropy__astropy-13453", "django__django-11211", "django__django-15554"} <= blocked
    assert all(runs[name].resolved for name in blocked - {"django__django-15695"})


def test_the_figures_report_shares_lift_and_headlines_per_trigger(tmp_path: Path) -> None:
    figures = replay.summarise(list(_replayed(tmp_path).values()))
    assert (figures["runs"], figures["solved"], figures["unsolved"]) == (6, 5, 1)
    assert figures["by_type"]["repeated_error"]["unsolved_share"] == 1.0
    assert figures["paused"]["solved_share"] == 0.0
    assert figures["warnings"]["paused_without_warning"] == 0


def test_the_error_line_is_the_whole_error_not_pytests_cut_summary_of_it() -> None:
    output = (
        "    def test_skycoord():\n"
        ">       t = Table([sc])\n"
        "E       TypeError: concatenate() got an unexpected keyword argument 'dtype'\n"
        "=========================== short test summary info ============================\n"
        "FAILED astropy/table/tests/test_mixin.py::test_skycoord_representation - Type...\n"
        "============================== 1 failed in 0.52s ===============================\n"
    )
    assert replay.error_line(output) == "TypeError: concatenate() got an unexpected keyword argument 'dtype'"
    whole = "FAILED tests/test_a.py::test_x - AssertionError: assert 1 == 2"
    assert replay.error_line(f"E   ValueError: earlier\n{whole}\n") == whole  # a whole summary counts
    totals = "AssertionError: 1 != 2\n\nRan 4 tests in 0.1s\n\nFAILED (failures=1, errors=2)\n"
    assert replay.error_line(totals) == "AssertionError: 1 != 2"
    cut_only = "FAILED tests/test_a.py::test_x - Assert..."
    assert replay.error_line(f"{cut_only}\n") == cut_only


def test_a_headline_leading_with_the_error_of_a_pytest_summary_line_carries_it() -> None:
    line = (
        "FAILED lib/matplotlib/tests/test_dates.py::test_partial_year_formatter"
        " - AssertionError: assert '' == '2021'"
    )
    assert replay.carries("AssertionError: assert '' == '2021' (the same error 3 times)", line)
    assert not replay.carries("AssertionError: assert 1 == 2 (the same error 3 times)", line)
    assert not replay.carries("lib/matplotlib/tests/test_dates.py failed", line)


def test_the_installed_hook_process_decides_exactly_as_the_in_process_replay(
    tmp_path: Path, private_relay_sockets: Path
) -> None:
    # The run that pauses (warned first) and a solved one that does not: 108 hook runs, as a
    # host makes them (through the relay daemon the first run starts, as by default).
    chosen = {"limit": 2, "start": 3}
    runtime = private_relay_sockets.parent
    through_process = asyncio.run(
        replay.replay(SLICE, tmp_path / "process", None, process=True, runtime=runtime, **chosen)
    )
    in_process = asyncio.run(replay.replay(SLICE, tmp_path / "in", None, **chosen))
    try:
        # Each run's store got its daemon: the hook runs after the first went through it.
        assert all(daemons_of(str(tmp_path / "process" / f"run-{n}.db")) for n in range(2))
    finally:
        stop_daemons(private_relay_sockets)
    assert [r.run for r in through_process] == ["django__django-15695", "pytest-dev__pytest-7324"]
    assert through_process == in_process
    assert through_process[0].pause is not None
    assert through_process[0].warnings


# A file editor's run written for this test (the shape of the second development corpus,
# none of its text): the model creates a script, is refused when it creates it again, works
# around the refusal (rm, create), and so three times; then an edit refused four times over.
def _step(command: str, output: str = "", returncode: int = 0) -> dict:
    return {"command": command, "output": output, "returncode": returncode}


def _editor_run(tmp_path: Path, steps: list[dict]) -> Path:
    path = tmp_path / "editor.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(json.dumps({"instance_id": "calc-1", "resolved": True, "steps": steps}) + "\n")
    return path


EXISTS = "ERROR:\nInvalid `path` parameter: /workspace/repro.py. File already exists at: /workspace/repro.py."
CREATE = 'str_replace_editor create /workspace/repro.py --file_text "print(1)\\n"'
TWICE = "ERROR:\nNo replacement was performed. Multiple occurrences of old_str `x = 1` in lines [3, 9]."
EDIT = 'str_replace_editor str_replace /workspace/calc/a.py --old_str "x = 1" --new_str "x = 2"'


def test_editor_calls_are_delivered_as_the_hosts_read_write_and_edit() -> None:
    assert replay.editor_call('str_replace_editor view /workspace/calc/a.py --view_range "[1, 5]"') == (
        "Read",
        {"file_path": "/workspace/calc/a.py"},
    )
    assert replay.editor_call(EDIT) == (
        "Edit",
        {"file_path": "/workspace/calc/a.py", "old_string": "x = 1", "new_string": "x = 2"},
    )
    assert replay.editor_call(CREATE) == (
        "Write",
        {"file_path": "/workspace/repro.py", "content": "print(1)\n"},
    )
    cut = replay.editor_call('str_replace_editor create /workspace/b.py --file_text "def f():\\n    retu')
    assert cut == ("Write", {"file_path": "/workspace/b.py", "content": "def f():\\n    retu"})
    assert replay.editor_call("ls /workspace") is None
    pre, post = replay.payloads("r", "/workspace", 0, _step(EDIT, TWICE, 1))
    assert (pre["tool_name"], post["hook_event_name"], post["error"]) == ("Edit", "PostToolUseFailure", TWICE)


def test_a_refusal_worked_around_never_pauses_and_one_repeated_pages_only_after_a_warning(
    tmp_path: Path,
) -> None:
    worked_around = [_step(CREATE, "File created successfully at: /workspace/repro.py")]
    for _ in range(3):
        worked_around += [
            _step(CREATE, EXISTS, 1),
            _step("rm /workspace/repro.py"),
            _step(CREATE, "File created successfully at: /workspace/repro.py"),
            _step("python /workspace/repro.py", "1"),
        ]
    repeated = [_step(EDIT, TWICE, 1) for _ in range(4)] + [_step("python /workspace/repro.py", "1")]
    config = tmp_path / "config.toml"  # refusals from the task's first calls: no grace
    config.write_text("[hooks]\nrepeat_grace_calls = 0\n", encoding="utf-8")
    runs = replay.replay(_editor_run(tmp_path, worked_around + repeated), tmp_path, str(config), None)
    [run] = asyncio.run(runs)
    assert run.pause is not None
    assert run.pause.step == len(worked_around) + 4  # the fourth refusal paged, not the third
    assert run.pause.types == ("repeated_error",)
    assert run.warnings == (len(worked_around) + 2,)  # the third refusal warned


def test_a_lint_guards_refusal_is_named_by_its_first_finding_and_the_product_headlines_it() -> None:
    output = (
        "Your proposed edit has introduced new syntax error(s).\nERRORS:\n"
        "- E999 IndentationError: unexpected indent\n- F821 undefined name 'x'\n"
        "Your changes have NOT been applied. Please fix your edit command and try again.\n"
        "DO NOT re-run the same failed edit command. Running it again will lead to the same error.\n"
    )
    assert replay.error_line(output) == "E999 IndentationError: unexpected indent"
    assert replay.carries(headline(output), "E999 IndentationError: unexpected indent")
