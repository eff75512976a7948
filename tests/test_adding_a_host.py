"""The worked example of docs/architecture.md ("Adding a host"), carried out: a fourth coding
host added to a copy of the package by two source files, its module and its name in the
registry, then run end to end in processes of their own.

The host, Tern, is made up for the example: its payloads are flat (``event``, ``tool``,
``args``, ``result``, ``workspace``) and it reads ``decision``/``reason`` back. The copy is
edited with exactly the example's changes; every command runs the copy's console module, not
this checkout, on a real SQLite store: ``hook install tern`` writes ``.tern/hooks.json``, the
command it wrote records Tern's failing test runs until the repeated error pauses the task,
then denies an edit in Tern's JSON and lets a read through; ``hook uninstall tern`` takes
the hooks out; and the registry's completeness check finds nothing missing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOOKS = Path("server") / "mcp_server_escalation" / "hooks"

MODULE = '''"""Tern's hook payloads and answers (the fourth host of docs/architecture.md's example)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .description import HostDescription
from .events import Answer, HookEvent, Kind, clip, integer, mapping, text

EVENTS: dict[str, Kind] = {"before_tool": "pre_tool", "after_tool": "post_tool", "turn_end": "stop"}


def parse(payload: Mapping[str, Any]) -> HookEvent:
    """A Tern payload as a ``HookEvent``."""
    name = text(payload, "event", limit=64) or ""
    args, result = mapping(payload, "args"), mapping(payload, "result")
    return HookEvent(
        host="tern",
        name=name,
        kind=EVENTS.get(name, "unknown"),
        session_id=text(payload, "session", limit=256),
        tool_use_id=text(payload, "call", limit=256),
        tool_name=text(payload, "tool", limit=256),
        file_path=text(args, "path"),
        command=text(args, "command"),
        output=text(result, "output"),
        exit_code=integer(result, "exit_code"),
        cwd=text(payload, "workspace"),
    )


def encode(answer: Answer, event: HookEvent) -> dict[str, Any] | None:
    """The JSON Tern reads for ``answer`` (None: no decision)."""
    if answer.deny and event.kind == "pre_tool":
        return {"decision": "deny", "reason": clip(answer.deny)}
    if answer.block and event.kind == "stop":
        return {"decision": "continue", "reason": clip(answer.block)}
    if answer.context and event.kind == "post_tool":
        return {"note": clip(answer.context)}
    return None


HOST = HostDescription(
    name="tern",
    parse=parse,
    encode=encode,
    settings_file=(".tern", "hooks.json"),
    layout="flat",
    handlers=(("before_tool", None), ("after_tool", None), ("turn_end", None)),
    project_variables=("TERN_WORKSPACE",),  # else the event's workspace
    edit_tools=("edit_file",),
    shell_tools=("run_shell",),
    read_tools=("read_file",),
)
'''
# (file, the text it holds, what replaces it): the example's changes to existing files.
EDITS = [
    (
        HOOKS / "hosts.py",
        'NAMES = ("claude-code", "cursor", "codex")',
        'NAMES = ("claude-code", "cursor", "codex", "tern")',
    )
]
ADDED = HOOKS / "tern.py"

FAILING = "FAILED tests/test_calc.py::test_add - assert -1 == 3\n1 failed in 0.02s"
TASK = "t-tern"
START = """
import sys, anyio
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.services.tasks import start_task
from mcp_server_escalation.settings import Settings

async def main():
    async with open_runtime(Settings(db_path=sys.argv[1], project_root=sys.argv[2])) as rt:
        await start_task(rt, title="Fix the adder", task_id=sys.argv[3])

anyio.run(main)
"""
CHECK = """
import json, sys
import mcp_server_escalation
sys.path.insert(0, sys.argv[1])
import test_host_registry as completeness
print(json.dumps({"package": mcp_server_escalation.__file__, "missing": completeness.problems()}))
"""


def _copy_with_the_example(target: Path) -> list[Path]:
    """The checkout's package, prompts and registry test, the example applied; the source
    files it changed or added."""
    shutil.copytree(
        ROOT / "server", target / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    shutil.copytree(ROOT / "prompts", target / "prompts")
    (target / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "test_host_registry.py", target / "tests")
    for path, old, new in EDITS:
        text = (target / path).read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{path}: the example's anchor is not there once"
        (target / path).write_text(text.replace(old, new), encoding="utf-8")
    (target / ADDED).write_text(MODULE, encoding="utf-8")
    return [*dict.fromkeys(path for path, _, _ in EDITS), ADDED]


def _changed_sources(copy: Path) -> list[Path]:
    """Every Python file of the copy's package that differs from the checkout's, or is new."""
    found = []
    for path in sorted((copy / "server").rglob("*.py")):
        mine = ROOT / path.relative_to(copy)
        if not mine.exists() or mine.read_bytes() != path.read_bytes():
            found.append(path.relative_to(copy))
    return found


def test_a_host_added_as_the_worked_example_says_installs_records_pauses_and_uninstalls(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "copy"
    changed = _copy_with_the_example(copy)
    assert _changed_sources(copy) == sorted(changed)
    assert len(changed) == 2

    project, db = tmp_path / "project", str(tmp_path / "escalations.db")
    project.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\nrepeats_need_a_change = false\n", encoding="utf-8")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ESCALATION_", "CLAUDE_", "CURSOR_"))},
        "PYTHONPATH": str(copy / "server"),
        "ESCALATION_HOOK_RELAY": "off",
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    ours = f"{shlex.quote(sys.executable)} -m mcp_server_escalation"

    def run(*words: str, stdin: str = "", **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(words), input=stdin, capture_output=True, text=True, env={**env, **more},
            cwd=project, timeout=120, check=False,
        )  # fmt: skip

    installed = run(
        sys.executable, "-m", "mcp_server_escalation", "--db", db, "--config", str(config),
        "hook", "install", "tern", "--project-dir", str(project), "--command", ours,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    settings = project / ".tern" / "hooks.json"
    written = json.loads(settings.read_text(encoding="utf-8"))
    assert sorted(written["hooks"]) == ["after_tool", "before_tool", "turn_end"]
    (handler,) = written["hooks"]["before_tool"]
    command = shlex.split(str(handler["command"]))
    assert command[-2:] == ["hook", "tern"]

    started = run(sys.executable, "-c", START, db, str(project), TASK)
    assert started.returncode == 0, started.stderr

    def event(**payload: Any) -> str:
        said = run(*command, stdin=json.dumps({"session": "s-1", "workspace": str(project), **payload}),
                   ESCALATION_TASK=TASK)  # fmt: skip
        assert said.returncode == 0, said.stderr
        return said.stdout

    failing = {"exit_code": 1, "output": FAILING}
    notes = [
        event(
            event="after_tool", call=f"c{n}", tool="run_shell", args={"command": "pytest -q"}, result=failing
        )
        for n in range(3)
    ]
    assert notes[0] == ""  # a first failure is only recorded
    assert "the same error 2 times" in json.loads(notes[1])["note"]  # the warning, in Tern's form
    assert "raised escalation 1 (repeated error)" in json.loads(notes[2])["note"]
    edit = {"path": str(project / "src" / "calc.py")}
    denied = json.loads(event(event="before_tool", call="c9", tool="edit_file", args=edit))
    assert denied["decision"] == "deny"
    assert "escalation 1" in denied["reason"]
    assert event(event="before_tool", call="c10", tool="read_file", args=edit) == ""  # never denied

    listed = run(sys.executable, "-m", "mcp_server_escalation", "--db", db, "escalations", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (pending,) = json.loads(listed.stdout)["escalations"]
    assert (pending["type"], pending["task_id"]) == ("repeated_error", TASK)

    removed = run(
        sys.executable,
        "-m",
        "mcp_server_escalation",
        "hook",
        "uninstall",
        "tern",
        "--project-dir",
        str(project),
    )
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text(encoding="utf-8")) == {}

    checked = run(sys.executable, "-c", CHECK, str(copy / "tests"))
    assert checked.returncode == 0, checked.stderr
    said = json.loads(checked.stdout.splitlines()[-1])
    assert said["package"].startswith(str(copy))
    assert said["missing"] == []
