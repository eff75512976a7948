"""``hook install``: merges into the host's settings without clobbering; idempotent; dry run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from hooks_support import SCRIPT, run_cli

# What the installer writes by default: this very script, by absolute path.
HOOK_SCRIPT = shlex.quote(str(SCRIPT))


async def test_claude_code_hooks_are_merged_into_existing_project_settings(tmp_path: Path) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    existing = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./validate.sh"}]}]
        },
    }
    settings.write_text(json.dumps(existing), encoding="utf-8")
    run = await run_cli("hook", "install", "claude-code", "--project-dir", str(project), tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    written = json.loads(settings.read_text(encoding="utf-8"))
    assert written["permissions"] == existing["permissions"]
    pre = written["hooks"]["PreToolUse"]
    assert pre[0] == existing["hooks"]["PreToolUse"][0]  # theirs first, untouched
    assert pre[1] == {
        "matcher": "*",
        "hooks": [{"type": "command", "command": f"{HOOK_SCRIPT} hook claude-code", "timeout": 15}],
    }
    assert set(written["hooks"]) == {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionStart",
    }
    assert "matcher" not in written["hooks"]["Stop"][0]
    assert run.stdout.count("added") == 5

    again = await run_cli("hook", "install", "claude-code", "--project-dir", str(project), tmp=tmp_path)
    assert "already installed" in again.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == written


async def test_a_dry_run_prints_the_result_and_writes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run = await run_cli("hook", "install", "cursor", "--project-dir", str(project), "--dry-run", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert not (project / ".cursor").exists()
    shown = json.loads(run.stdout[run.stdout.index("{") :])
    assert shown["version"] == 1
    assert shown["hooks"]["preToolUse"] == [{"command": f"{HOOK_SCRIPT} hook cursor", "timeout": 15}]
    assert sorted(shown["hooks"]) == sorted(
        ["preToolUse", "postToolUse", "postToolUseFailure", "stop", "sessionStart"]
    )
    assert "would add" in run.stdout


async def test_user_install_writes_to_the_home_folder_with_the_given_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    given = f"{sys.executable} -m mcp_server_escalation"
    run = await run_cli(
        "hook", "install", "cursor", "--user", "--command", given, tmp=tmp_path, HOME=str(home),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    written = json.loads((home / ".cursor" / "hooks.json").read_text(encoding="utf-8"))
    assert written["hooks"]["stop"] == [{"command": f"{given} hook cursor", "timeout": 15}]


async def test_an_unreadable_settings_file_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{ not json", encoding="utf-8")
    run = await run_cli("hook", "install", "claude-code", "--project-dir", str(project), tmp=tmp_path)
    assert run.returncode == 1
    assert "nothing was changed" in run.stderr
    assert settings.read_text(encoding="utf-8") == "{ not json"
    settings.write_text('{"hooks": []}', encoding="utf-8")
    wrong = await run_cli("hook", "install", "claude-code", "--project-dir", str(project), tmp=tmp_path)
    assert wrong.returncode == 1
    assert settings.read_text(encoding="utf-8") == '{"hooks": []}'
