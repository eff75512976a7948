"""``hook install``: merges into the host's settings without clobbering; idempotent; dry run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import anyio

from bounds import HUNG_AFTER
from hooks_support import SCRIPT, environment, run_cli

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
        "PermissionRequest",
        "Stop",
        "StopFailure",
        "SessionStart",
    }
    assert "matcher" not in written["hooks"]["Stop"][0]
    assert run.stdout.count("added") == 7

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


async def test_codex_hooks_are_merged_into_the_projects_hooks_json_once(tmp_path: Path) -> None:
    project = tmp_path / "project"
    hooks_json = project / ".codex" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}
    hooks_json.write_text(json.dumps({"hooks": {"PreToolUse": [theirs]}}), encoding="utf-8")
    run = await run_cli("hook", "install", "codex", "--project-dir", str(project), tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    written = json.loads(hooks_json.read_text(encoding="utf-8"))
    assert set(written) == {"hooks"}  # Codex refuses a hooks.json with fields it does not know
    line = f"{HOOK_SCRIPT} hook codex"
    assert written["hooks"]["PreToolUse"] == [
        theirs,
        {"matcher": "*", "hooks": [{"type": "command", "command": line, "timeout": 15}]},
    ]
    assert written["hooks"]["PostToolUse"] == [
        {"matcher": "Bash|apply_patch", "hooks": [{"type": "command", "command": line, "timeout": 15}]}
    ]
    assert written["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": line, "timeout": 15}]}]
    assert set(written["hooks"]) == {"PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SessionStart"}

    again = await run_cli("hook", "install", "codex", "--project-dir", str(project), tmp=tmp_path)
    assert "already installed" in again.stdout
    assert json.loads(hooks_json.read_text(encoding="utf-8")) == written


async def test_a_codex_user_install_writes_a_command_that_answers_codex(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db = tmp_path / "store.db"
    run = await run_cli("--db", str(db), "hook", "install", "codex", "--user", tmp=tmp_path, HOME=str(home))
    assert run.returncode == 0, run.stderr
    written = json.loads((home / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    [group] = written["hooks"]["PreToolUse"]
    command = shlex.split(group["hooks"][0]["command"])
    assert command[-2:] == ["hook", "codex"]
    assert str(db) in command  # the store chosen at install time, by absolute path
    payload = {
        "session_id": "s1",
        "turn_id": "t1",
        "transcript_path": None,
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "model": "gpt-5.5-codex",
        "permission_mode": "default",
        "tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch\n*** Add File: /outside/x.txt\n+x\n*** End Patch\n"},
        "tool_use_id": "call_1",
    }
    with anyio.fail_after(HUNG_AFTER):
        done = await anyio.run_process(
            command, input=json.dumps(payload).encode(), check=False, env=environment(tmp_path)
        )
    # An edit outside the project is neither gated nor counted: no decision, and no error.
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


async def test_http_install_writes_http_handlers_with_the_token_and_task_from_the_environment(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    install = ("hook", "install", "claude-code", "--project-dir", str(project))
    local = await run_cli(*install, tmp=tmp_path)
    assert local.returncode == 0, local.stderr
    remote = await run_cli(*install, "--http", "https://escalation.example.com", tmp=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout.count("replaced") == 7  # each command handler becomes the http one
    written = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert written["hooks"]["PreToolUse"] == [
        {
            "matcher": "*",
            "hooks": [
                {
                    "type": "http",
                    "timeout": 15,
                    "url": "https://escalation.example.com/hooks/claude-code",
                    "headers": {
                        "Authorization": "Bearer $ESCALATION_AGENT_TOKEN",
                        "X-Escalation-Task": "$ESCALATION_TASK",
                    },
                    "allowedEnvVars": ["ESCALATION_AGENT_TOKEN", "ESCALATION_TASK"],
                }
            ],
        }
    ]
    handlers = [h for groups in written["hooks"].values() for g in groups for h in g["hooks"]]
    assert len(handlers) == 7
    assert all("command" not in h for h in handlers)
    again = await run_cli(
        *install, "--http", "https://escalation.example.com/hooks/claude-code/", tmp=tmp_path
    )
    assert "already installed" in again.stdout
    back = await run_cli(*install, tmp=tmp_path)
    assert back.stdout.count("replaced") == 7  # and back to commands: no event answered twice
    restored = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert restored["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "timeout": 15, "command": f"{HOOK_SCRIPT} hook claude-code"}]}
    ]


async def test_http_install_refuses_what_it_cannot_write_and_changes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    cases = [
        (("cursor", "--http", "https://e.example"), "commands only"),
        (("claude-code", "--http", "ftp://e.example"), "http:// or https://"),
        (("claude-code", "--http", "https://user:secret@e.example"), "no user, password"),
        (("claude-code", "--http", "https://e.example", "--db", str(tmp_path / "x.db")), "--db"),
    ]
    for (host, *options), said in cases:
        run = await run_cli("hook", "install", host, "--project-dir", str(project), *options, tmp=tmp_path)
        assert (run.returncode, said in run.stderr) == (1, True), run.stderr
    assert not (project / ".claude").exists()
    plain = await run_cli(
        "hook", "install", "claude-code", "--project-dir", str(project), "--http", "http://10.0.0.5:8765",
        tmp=tmp_path,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "unencrypted" in plain.stdout


async def test_a_database_store_is_written_by_its_url_and_never_with_a_password(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    url = "postgresql://esc@db.example.internal:5432/escalations"
    run = await run_cli("--db", url, "hook", "install", "codex", "--user", tmp=tmp_path, HOME=str(home))
    secret = url.replace("esc@", "esc:s3cret@")
    refused = await run_cli(
        "--db", secret, "hook", "install", "cursor", "--user", tmp=tmp_path, HOME=str(home)
    )

    assert run.returncode == 0, run.stderr
    written = json.loads((home / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    command = shlex.split(written["hooks"]["PreToolUse"][0]["hooks"][0]["command"])
    assert command[command.index("--db") + 1] == url  # as given: no file path made of it
    assert refused.returncode != 0
    assert "password" in refused.stderr
    assert "s3cret" not in refused.stderr
    assert not (home / ".cursor").exists()
