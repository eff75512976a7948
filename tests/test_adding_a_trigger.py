"""The worked example of docs/architecture.md ("Adding a trigger"), carried out: a counting
trigger of ``test_stall``'s shape added to a copy of the package by five source files, its
words and its row, and no migration, then run end to end in a process of its own.

The copy (``server/``, ``prompts/``, ``docs/`` and the completeness test) is edited with
exactly the changes the example lists; a child process imports the copy, not this
checkout, and on a real SQLite store: the trigger fires at its threshold on the call that
reaches it, the task pauses, the operator's view lists its counter against its threshold,
``escalations show`` says it in words (its kind, what it measured against its threshold),
an acknowledged answer starts the counter again, and the completeness check finds nothing
missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("server") / "mcp_server_escalation"

RECORD = """    TriggerRecord(
        type="tool_loop",
        words="tool loop",
        answers=_ANSWERS,
        raise_on_false_alarm="tool_loop_after",
        resets_on_ack=("same_call_in_a_row",),
        limits=(("same_call_in_a_row", "tool_loop_after"),),
        templates=_templates(trigger_tool_loop=("count", "threshold")),
        evidence=COUNTED_EVIDENCE,
        view=GENERIC_VIEW,
    ),
)

BY_TYPE"""
COUNT = """    counters = counters.model_copy(update={"same_call_in_a_row": counters.same_call_in_a_row + 1})
    return _Measured(counters, baseline, test_run, best)"""
FIRE = """    loop = triggers.at_limit("tool_loop", c, t)
    if loop is not None:
        said = {"count": c.same_call_in_a_row, "threshold": t.tool_loop_after}
        fires.append(Fires(loop, Wording("trigger_tool_loop", said)))
    return tuple(f for f in fires if f is not None)"""

# (file, the text it holds, what replaces it): the example's changes, and nothing else.
EDITS: list[tuple[Path, str, str]] = [
    (PACKAGE / "models" / "limits.py", '    "system_error",\n]', '    "system_error",\n    "tool_loop",\n]'),
    (
        PACKAGE / "models" / "thresholds.py",
        "    max_failing_test_runs: PositiveLimit | None = None\n",
        "    max_failing_test_runs: PositiveLimit | None = None\n    tool_loop_after: PositiveLimit = 8\n",
    ),
    (
        PACKAGE / "models" / "tasks.py",
        '(max_failing_test_runs)")\n',
        '(max_failing_test_runs)")\n    same_call_in_a_row: int = 0\n',
    ),
    (PACKAGE / "rules" / "triggers" / "records.py", ")\n\nBY_TYPE", RECORD),
    (
        PACKAGE / "rules" / "decide" / "progress.py",
        "    return _Measured(counters, baseline, test_run, best)",
        COUNT,
    ),
    (
        PACKAGE / "rules" / "decide" / "progress.py",
        "    return tuple(f for f in fires if f is not None)",
        FIRE,
    ),
]
WORDS = (
    "\n[templates.trigger_tool_loop]\n"
    'text = "The same call {count} times in a row (threshold {threshold})."\n'
)
ROW = "| `tool_loop` | tool loop | guidance, override, terminate | `tool_loop_after` | the calls in a row |\n"

SCENARIO = r"""
import json, sys
from pathlib import Path
import anyio
import mcp_server_escalation
from mcp_server_escalation.cli.escalation_view import escalation_lines
from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.rules.decide.triggers import COUNTER_LIMITS
from mcp_server_escalation.services.escalation_answers import resolve_escalation
from mcp_server_escalation.services.escalation_delivery import acknowledge_response
from mcp_server_escalation.services.progress import report_progress
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.services.tasks import get_task, start_task
from mcp_server_escalation.settings import Settings

sys.path.insert(0, sys.argv[2])
import test_trigger_records as completeness

async def main():
    said = {"package": mcp_server_escalation.__file__}
    settings = Settings(db_path=sys.argv[1], project_root="/p")
    async with open_runtime(settings) as rt:
        quiet = {"no_file_changes_after_attempts": 1000, "total_verification_attempts": 1000}
        await start_task(rt, title="t", task_id="t-1",
                         thresholds=ThresholdOverrides(tool_loop_after=3, **quiet))
        results = [await report_progress(rt, task_id="t-1", note=f"try {n}") for n in range(3)]
        said["fired"] = [r.escalation.type if r.escalation else None for r in results]
        escalation = results[-1].escalation
        said["directive"] = results[-1].directive
        [trigger] = escalation.triggers
        said["summary"] = trigger.summary
        said["shown"] = escalation_lines(escalation, rt.prompts, 100)
        said["limits"] = ("same_call_in_a_row", "tool_loop_after") in COUNTER_LIMITS
        await resolve_escalation(rt, escalation_id=escalation.escalation_id, response_type="guidance",
                                 content="Try something else", role="operator")
        await acknowledge_response(rt, escalation_id=escalation.escalation_id)
        task = await get_task(rt, task_id="t-1")
        said["after_ack"] = task.task.counters.same_call_in_a_row
        said["status"] = task.task.status
    said["missing"] = completeness.problems(completeness.RECORDS, completeness.shipped())
    print(json.dumps(said))

anyio.run(main)
"""


def _copy_with_the_example(target: Path) -> list[Path]:
    """The checkout's package, prompts, docs and completeness test, the example applied;
    the files it changed."""
    shutil.copytree(
        ROOT / "server", target / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for folder in ("prompts", "docs"):
        shutil.copytree(ROOT / folder, target / folder)
    (target / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "test_trigger_records.py", target / "tests")
    for path, old, new in EDITS:
        text = (target / path).read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{path}: the example's anchor is not there once"
        (target / path).write_text(text.replace(old, new), encoding="utf-8")
    with (target / "prompts" / "escalations.toml").open("a", encoding="utf-8") as toml:
        toml.write(WORDS)
    doc = target / "docs" / "triggers.md"
    last = "| `system_error` |"
    lines = doc.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith(last))
    doc.write_text("".join([*lines[: at + 1], ROW, *lines[at + 1 :]]), encoding="utf-8")
    edited = list(dict.fromkeys(path for path, _, _ in EDITS))
    return [*edited, Path("prompts/escalations.toml"), Path("docs/triggers.md")]


def test_a_counting_trigger_added_as_the_worked_example_says_fires_shows_and_resets(tmp_path: Path) -> None:
    changed = _copy_with_the_example(tmp_path / "copy")
    sources = [p for p in changed if p.suffix == ".py"]
    assert len(sources) == 5
    assert not [p for p in changed if "store" in p.parts]  # no migration, no store change

    env = {**os.environ, "PYTHONPATH": str(tmp_path / "copy" / "server")}
    run = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(tmp_path / "escalations.db"), str(tmp_path / "copy" / "tests")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    said = json.loads(run.stdout.splitlines()[-1])

    assert said["package"].startswith(str(tmp_path / "copy"))
    assert said["fired"] == [None, None, "tool_loop"]
    assert said["directive"] == "pause"
    assert said["summary"] == "The same call 3 times in a row (threshold 3)."
    shown = "\n".join(said["shown"])
    for words in (
        "Escalation 1  tool loop  pending",
        "threshold tool loop after 3",
        "measured same call in a row 3",
    ):
        assert words in shown, shown
    assert said["limits"] is True
    assert (said["after_ack"], said["status"]) == (0, "active")
    assert said["missing"] == []
