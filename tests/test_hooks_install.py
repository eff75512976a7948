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


def _stop_handlers(settings: Path) -> list[dict[str, object]]:
    return [
        h
        for group in json.loads(settings.read_text(encoding="utf-8"))["hooks"]["Stop"]
        for h in group["hooks"]
    ]


async def test_the_wake_handler_is_installed_beside_the_stop_hook_once_and_follows_its_minutes(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "./notify.sh"}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}), encoding="utf-8")
    install = ("hook", "install", "claude-code", "--project-dir", str(project))

    run = await run_cli(*install, "--wake-minutes", "30", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    line = f"{HOOK_SCRIPT} hook claude-code"
    wake = {"type": "command", "command": f"{line} --wake-minutes 30", "asyncRewake": True, "timeout": 1830}
    # As docs/hooks.md shows it: the wake handler in the group of our Stop hook, theirs kept.
    groups = json.loads(settings.read_text(encoding="utf-8"))["hooks"]["Stop"]
    assert groups[0] == {"hooks": [theirs]}
    assert groups[1] == {"hooks": [{"type": "command", "command": line, "timeout": 15}, wake]}
    assert run.stdout.count("added") == 8
    assert "Stop (wake)" in run.stdout

    for again in (("--wake-minutes", "30"), ()):  # the same minutes, or an ordinary install
        same = await run_cli(*install, *again, tmp=tmp_path)
        assert "already installed" in same.stdout, same.stdout
        assert _stop_handlers(settings) == [theirs, {"type": "command", "command": line, "timeout": 15}, wake]

    longer = await run_cli(*install, "--wake-minutes", "90", tmp=tmp_path)
    assert "replaced" in longer.stdout
    handlers = _stop_handlers(settings)
    assert [h for h in handlers if h.get("asyncRewake")] == [
        {**wake, "command": f"{line} --wake-minutes 90", "timeout": 5430}
    ]
    assert len(handlers) == 3  # never a second wake handler, nor a second Stop hook

    # Another store by an ordinary install: the wake handler gets it too, and keeps its minutes.
    other_store = await run_cli(*install, "--db", str(tmp_path / "other.db"), tmp=tmp_path)
    assert other_store.returncode == 0, other_store.stderr
    (waking,) = [h for h in _stop_handlers(settings) if h.get("asyncRewake")]
    assert str(tmp_path / "other.db") in str(waking["command"])
    assert str(waking["command"]).endswith("hook claude-code --wake-minutes 90")
    assert waking["timeout"] == 5430


async def test_wake_minutes_outside_their_limits_or_for_another_host_change_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    cases = [
        (("claude-code", "--wake-minutes", "0"), "--wake-minutes", "above 0"),
        (("claude-code", "--wake-minutes", "1441"), "--wake-minutes", "at most 1440"),
        (("claude-code", "--wake-minutes", "soon"), "--wake-minutes", "not a number"),
        (("cursor", "--wake-minutes", "30"), "--wake-minutes", "only claude-code"),
        (("codex", "--wake-minutes", "30"), "--wake-minutes", "no hook that wakes"),
        (("claude-code", "--http", "https://e.example", "--wake-minutes", "30"), "--http", "--wake-minutes"),
    ]
    for (host, *options), field, problem in cases:
        run = await run_cli("hook", "install", host, "--project-dir", str(project), *options, tmp=tmp_path)
        assert run.returncode != 0, run.stdout
        said = " ".join(run.stderr.split())  # as wrapped to the terminal
        assert field in said, said
        assert problem in said, said
    assert list(project.iterdir()) == []


async def test_uninstall_takes_out_every_handler_of_ours_and_nothing_else(tmp_path: Path) -> None:
    project = tmp_path / "project"
    claude = project / ".claude" / "settings.json"
    claude.parent.mkdir(parents=True)
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./validate.sh"}]}
    claude.write_text(json.dumps({"model": "x", "hooks": {"PreToolUse": [theirs]}}), encoding="utf-8")
    where = ("--project-dir", str(project))
    for host, *options in (("claude-code", "--wake-minutes", "5"), ("cursor",), ("codex",)):
        installed = await run_cli("hook", "install", host, *where, *options, tmp=tmp_path)
        assert installed.returncode == 0, installed.stderr

    dry = await run_cli("hook", "uninstall", "claude-code", *where, "--dry-run", tmp=tmp_path)
    assert dry.stdout.count("would remove") == 8
    assert len(_stop_handlers(claude)) == 2  # a dry run writes nothing

    runs = [
        await run_cli("hook", "uninstall", host, *where, tmp=tmp_path)
        for host in ("claude-code", "cursor", "codex")
    ]
    assert [run.returncode for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    assert [run.stdout.count("removed") for run in runs] == [8, 5, 5]
    assert json.loads(claude.read_text(encoding="utf-8")) == {"model": "x", "hooks": {"PreToolUse": [theirs]}}
    assert json.loads((project / ".cursor" / "hooks.json").read_text(encoding="utf-8")) == {"version": 1}
    assert json.loads((project / ".codex" / "hooks.json").read_text(encoding="utf-8")) == {}

    again = await run_cli("hook", "uninstall", "claude-code", *where, tmp=tmp_path)
    assert "no claude-code hooks of ours are installed" in again.stdout


async def test_http_install_drops_the_wake_handler_and_uninstall_takes_the_http_handlers(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    install = ("hook", "install", "claude-code", "--project-dir", str(project))
    await run_cli(*install, "--wake-minutes", "5", tmp=tmp_path)
    remote = await run_cli(*install, "--http", "https://escalation.example.com", tmp=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert "removed Stop" in remote.stdout
    (stop,) = _stop_handlers(settings)
    assert stop["type"] == "http"  # the wake handler waited on this machine's store: gone

    gone = await run_cli("hook", "uninstall", "claude-code", "--project-dir", str(project), tmp=tmp_path)
    assert gone.stdout.count("removed") == 7
    assert json.loads(settings.read_text(encoding="utf-8")) == {}
