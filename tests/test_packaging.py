"""The hosts' own packaging, checked by the hosts' own tools (pinned, from npm:
tests/client_envs.py), each in a throw-away home:

- the Claude Code plugin (``.claude-plugin/``): the MCP server and the hooks in one install,
  validated and installed by the real ``claude`` CLI; its hooks are exactly what ``hook
  install claude-code`` writes for the script on ``PATH``, so the two routes cannot drift;
- the MCP bundle for Claude Desktop (``manifest.json``, ``.mcpbignore``), validated and packed
  by the real ``mcpb`` CLI; the packed bundle, started as its manifest says (``uv run``),
  serves every tool it lists;
- ``server.json`` for the official MCP registry, valid against the registry's 2025-12-11
  schema (schemas/external/);
- the entries docs/install.md gives each host, read and run by Claude Code, Gemini CLI and
  Codex themselves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from client_envs import cache_root, client_python, npm_modules
from http_support import SCRIPT
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.hooks.claude_code import HANDLERS as CLAUDE_EVENTS
from mcp_server_escalation.hooks.install import plugin_hooks, plugin_server
from mcp_server_escalation.prompts import PromptBook

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / ".claude-plugin" / "plugin.json"
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
BUNDLE_MANIFEST = ROOT / "manifest.json"
REGISTRY_ENTRY = ROOT / "server.json"
REGISTRY_SCHEMA = ROOT / "schemas" / "external" / "server.schema.json"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def _claude(
    home: Path, *args: str, cwd: Path | None = None, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The pinned ``claude`` CLI, nothing sent anywhere (``_host``); ``path``: its whole PATH."""
    return _host("claude-code", "claude", home, *args, cwd=cwd or home, path=path)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_plugin_runs_the_hooks_hook_install_writes_and_the_server_by_its_registered_name() -> None:
    plugin = _json(PLUGIN)
    missing = PromptBook.load(data_dir("prompts")).render("plugin_script_missing")

    # scripts/plugin_manifest.py writes them: the installer's hooks, each guarded.
    assert plugin["hooks"] == plugin_hooks(missing)
    assert plugin["mcpServers"] == {"escalation": plugin_server(missing)}
    assert plugin["version"] == VERSION
    assert [entry["version"] for entry in _json(MARKETPLACE)["plugins"]] == [VERSION]


def test_the_claude_cli_validates_the_plugin_and_its_marketplace_strictly(tmp_path: Path) -> None:
    for manifest in (PLUGIN, MARKETPLACE):
        checked = _claude(tmp_path, "plugin", "validate", "--strict", "--json", str(manifest))
        report = json.loads(checked.stdout)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert report["success"] is True
        assert (report["manifest"]["errors"], report["manifest"]["warnings"]) == ([], [])
    plugin_report = json.loads(_claude(tmp_path, "plugin", "validate", "--json", str(PLUGIN)).stdout)
    provided = {(hook["event"], hook.get("matcher")) for hook in plugin_report["provides"]["hooks"]}
    assert ("PreToolUse", "*") in provided
    assert len(provided) == 7
    # What the plugin catalog would refuse a submission for (a README, a licence): nothing.
    directory = _claude(tmp_path, "plugin", "validate", "--profile", "directory", str(ROOT))
    assert directory.returncode == 0, directory.stdout + directory.stderr
    # Nor a warning: the icon is there, and the hosts the plugin reaches are declared (none).
    assert "These checks found nothing to report" in directory.stdout, directory.stdout
    assert "Hosts not declared" not in directory.stdout, directory.stdout
    assert _json(PLUGIN)["network"] == {"hosts": []}


def test_the_repository_carries_the_licence_its_manifests_name() -> None:
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License")
    names = {
        _json(PLUGIN)["license"],
        _json(BUNDLE_MANIFEST)["license"],
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"],
    }
    assert names == {"MIT"}


def test_claude_plugin_install_sets_up_the_server_and_the_hooks_in_one_go(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()

    added = _claude(home, "plugin", "marketplace", "add", str(ROOT))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = _claude(home, "plugin", "install", "escalation@mcp-server-escalation")
    assert installed.returncode == 0, installed.stdout + installed.stderr

    listed = _claude(home, "plugin", "list", "--json")
    plugins = {entry["id"]: entry for entry in json.loads(listed.stdout)}
    assert plugins["escalation@mcp-server-escalation"]["enabled"] is True
    inventory = _claude(home, "plugin", "details", "escalation@mcp-server-escalation").stdout
    events = ", ".join(event for event, _ in CLAUDE_EVENTS)
    assert f"Hooks ({len(CLAUDE_EVENTS)})  {events}" in inventory
    assert "MCP servers (1)  escalation" in inventory
    # Claude Code starts the plugin's server as it would for a session, and it answers.
    servers = _claude(home, "mcp", "list", cwd=project)
    assert servers.returncode == 0, servers.stdout + servers.stderr
    ours = "plugin:escalation:escalation"  # plugin:<plugin>:<server>
    (line,) = [line for line in servers.stdout.splitlines() if line.startswith(ours)]
    assert "Connected" in line


def _without_the_script() -> str:
    """A PATH as after the README's install in a venv that is not activated: the system's
    folders, and node's for the CLI, but not the venv's bin."""
    folders = ["/usr/bin", "/bin"]
    assert not any((Path(folder) / "mcp-server-escalation").exists() for folder in folders)
    return os.pathsep.join(folders)


def _plugin_command(event: str) -> str:
    [group] = _json(PLUGIN)["hooks"][event]
    return str(group["hooks"][0]["command"])


def _run_plugin_hook(event: str, path: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The plugin's hook of ``event`` run as the host runs a command hook (a shell)."""
    payload = {
        "session_id": "plugin-path",
        "transcript_path": str(home / "t.jsonl"),
        "cwd": str(home),
        "hook_event_name": event,
        **({"source": "startup"} if event == "SessionStart" else {}),
        **({"tool_name": "Bash", "tool_input": {"command": "make"}} if event == "PreToolUse" else {}),
    }
    env = {"PATH": path, "HOME": str(home), "ESCALATION_DB": str(home / "plugin.db")}
    return subprocess.run(
        ["/bin/sh", "-c", _plugin_command(event)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=120,
        check=False,
    )


def test_the_plugin_says_what_to_do_when_its_script_is_not_on_path(tmp_path: Path) -> None:
    # After the README's venv install the plugin's server failed to connect and every hook
    # exited 127, visible only in a debug log: the session ran on with no capture at all.
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    bare = f"{Path(str(shutil.which('node'))).parent}{os.pathsep}{_without_the_script()}"
    for args in (
        ("plugin", "marketplace", "add", str(ROOT)),
        ("plugin", "install", "escalation@mcp-server-escalation"),
    ):
        done = _claude(home, *args, path=bare)
        assert done.returncode == 0, done.stdout + done.stderr
    servers = _claude(home, "mcp", "list", cwd=project, path=bare)
    (line,) = [
        line for line in servers.stdout.splitlines() if line.startswith("plugin:escalation:escalation")
    ]
    assert "Connected" not in line  # it cannot start: /mcp says so to the user

    started = _run_plugin_hook("SessionStart", _without_the_script(), home)
    assert started.returncode == 0
    told = json.loads(started.stdout)["systemMessage"]  # what the user reads at session start
    assert "not on the PATH" in told
    assert "pipx install" in told
    gated = _run_plugin_hook("PreToolUse", _without_the_script(), home)
    assert gated.returncode not in (0, 2, 127)  # a hook error the host reports, never a block
    assert "pipx install" in gated.stderr

    # Installed lastingly (on PATH), the same commands run the hook and record.
    on_path = f"{Path(SCRIPT).parent}{os.pathsep}{_without_the_script()}"
    ran = _run_plugin_hook("PreToolUse", on_path, home)
    assert (ran.returncode, ran.stderr) == (0, "")
    assert _run_plugin_hook("SessionStart", on_path, home).returncode == 0
    assert (home / "plugin.db").exists()
    servers = _claude(home, "mcp", "list", cwd=project)
    (line,) = [
        line for line in servers.stdout.splitlines() if line.startswith("plugin:escalation:escalation")
    ]
    assert "Connected" in line


def _mcpb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = npm_modules("mcpb") / ".bin" / "mcpb"
    return subprocess.run(
        [str(binary), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _uv(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The pinned ``uv`` with the tests' kept cache and this Python."""
    uv = client_python("uv").parent / "uv"
    env = {**os.environ, "UV_CACHE_DIR": str(cache_root() / "uv-cache"), "UV_PYTHON": sys.executable}
    done = subprocess.run(
        [str(uv), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


async def _tools_served_from(folder: Path, mcp_config: dict[str, Any]) -> set[str]:
    """The tools an unpacked bundle serves, started as its ``mcp_config`` says (``uv run`` in
    the bundle: uv builds the package from the bundle's own files and installs its
    dependencies, as the host does), on a fresh store."""
    uv = client_python("uv").parent / "uv"
    assert mcp_config["command"] == "uv"
    args = [arg.replace("${__dirname}", str(folder)) for arg in mcp_config["args"]]
    env = {
        **os.environ,
        "UV_CACHE_DIR": str(cache_root() / "uv-cache"),  # kept between runs, as a host keeps it
        "UV_PYTHON": sys.executable,  # the host brings its own; this one is at hand
        "ESCALATION_DB": str(folder / "bundle.db"),
    }
    params = StdioServerParameters(command=str(uv), args=args, env=env, cwd=str(folder))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        where = await session.call_tool("list_escalations", {})
    assert where.is_error is False
    return {tool.name for tool in listed.tools}


async def test_the_mcpb_cli_validates_and_packs_a_bundle_serving_every_tool_it_lists(tmp_path: Path) -> None:
    validated = _mcpb("validate", str(BUNDLE_MANIFEST), cwd=tmp_path)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    bundle = tmp_path / "escalation.mcpb"
    packed = _mcpb("pack", str(ROOT), str(bundle), cwd=tmp_path)
    assert packed.returncode == 0, packed.stdout + packed.stderr

    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "unpacked")
    tops = {name.split("/")[0] for name in names}
    # What installing the package needs (the lock with it), and nothing of the development tree.
    assert tops == {
        "manifest.json", "pyproject.toml", "uv.lock", "README.md", "LICENSE", "server", "prompts", "schemas"
    }  # fmt: skip
    assert not [name for name in names if "__pycache__" in name or name.startswith("schemas/external/")]
    manifest = _json(BUNDLE_MANIFEST)
    assert manifest["version"] == VERSION
    assert manifest["server"]["type"] == "uv"  # the host installs the dependencies
    # ... at the versions the bundle's lock pins, never resolved afresh; and that lock is the
    # one pyproject.toml's dependencies resolve to today (uv checks it).
    assert manifest["server"]["mcp_config"]["args"][:2] == ["run", "--frozen"]
    assert _uv("lock", "--check", cwd=tmp_path / "unpacked").returncode == 0
    listed = {tool["name"] for tool in manifest["tools"]}
    assert await _tools_served_from(tmp_path / "unpacked", manifest["server"]["mcp_config"]) == listed


def test_server_json_is_valid_against_the_registry_schema_and_names_this_release() -> None:
    schema = _json(REGISTRY_SCHEMA)
    entry = _json(REGISTRY_ENTRY)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)

    assert [error.message for error in validator.iter_errors(entry)] == []
    assert entry["$schema"] == schema["$id"]
    assert entry["version"] == VERSION
    (package,) = entry["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == (
        "pypi", "mcp-server-escalation", VERSION
    )  # fmt: skip
    # The registry proves the PyPI package is ours by this line in its README (the PyPI page).
    assert f"mcp-name: {entry['name']}" in (ROOT / "README.md").read_text(encoding="utf-8")
    # The schema is the one that refuses what the registry refuses.
    too_long = {**entry, "description": "x" * 101}
    assert [error.validator for error in validator.iter_errors(too_long)] == ["maxLength"]


def _install_page_entries() -> dict[str, list[Any]]:
    """The config entries of docs/install.md (its json and toml blocks), by section."""
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    entries: dict[str, list[Any]] = {}
    for section in re.split(r"^## ", page, flags=re.MULTILINE)[1:]:
        blocks = re.findall(r"^ *```(json|toml)\n(.*?)^ *```", section, re.DOTALL | re.MULTILINE)
        title = section.splitlines()[0]
        entries[title] = [
            json.loads(text) if kind == "json" else tomllib.loads(text) for kind, text in blocks
        ]
    return entries


def test_every_host_entry_in_the_install_page_parses_and_starts_the_installed_script() -> None:
    entries = _install_page_entries()
    commands = {}
    for title, blocks in entries.items():
        for entry in blocks:
            servers = entry.get("mcpServers") or entry.get("servers") or entry.get("mcp_servers")
            commands[title] = Path(servers["escalation"]["command"]).name
    assert sorted(commands) == [
        "Claude Code",
        "Claude Desktop",
        "Codex CLI",
        "Cursor",
        "Gemini CLI",
        "VS Code",
    ]
    assert set(commands.values()) == {"mcp-server-escalation"}


def _host(
    package: str, binary: str, home: Path, *args: str, cwd: Path, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """A host's pinned CLI with ``home`` as its home and the installed script on ``PATH``
    (or ``path`` as its whole PATH)."""
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": path or f"{Path(SCRIPT).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_DATA_HOME": str(home / "data"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    command = [str(npm_modules(package) / ".bin" / binary), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)


def _line(output: str, server: str) -> str:
    (line,) = [line for line in output.splitlines() if server in line and "mcp-server-escalation" in line]
    return line


def test_claude_code_runs_the_added_server_and_holds_the_projects_until_approved(tmp_path: Path) -> None:
    (entry,) = _install_page_entries()["Claude Code"]
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps(entry), encoding="utf-8")

    listed = _claude(tmp_path, "mcp", "list", cwd=project)
    assert "Pending approval" in _line(listed.stdout, "escalation:")
    # The other route, as the README gives it, works at once.
    added = _host(
        "claude-code", "claude", tmp_path, "mcp", "add", "mine", "--", "mcp-server-escalation", cwd=project
    )
    assert added.returncode == 0, added.stdout + added.stderr
    listed = _claude(tmp_path, "mcp", "list", cwd=project)
    assert "Connected" in _line(listed.stdout, "mine:")


def test_gemini_cli_connects_the_documented_entry_once_the_folder_is_trusted(tmp_path: Path) -> None:
    (entry,) = _install_page_entries()["Gemini CLI"]
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    (project / ".gemini" / "settings.json").write_text(json.dumps(entry), encoding="utf-8")
    (tmp_path / ".gemini").mkdir()
    quiet = {"general": {"disableAutoUpdate": True}, "privacy": {"usageStatisticsEnabled": False}}
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps(quiet), encoding="utf-8")

    untrusted = _host("gemini-cli", "gemini", tmp_path, "mcp", "list", cwd=project)
    assert "Disabled" in _line(untrusted.stdout + untrusted.stderr, "escalation:")
    # What answering its trust prompt writes.
    trusted = {str(project): "TRUST_FOLDER"}
    (tmp_path / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")
    listed = _host("gemini-cli", "gemini", tmp_path, "mcp", "list", cwd=project)
    assert "Connected" in _line(listed.stdout + listed.stderr, "escalation:")  # it lists on stderr


def test_codex_reads_the_documented_entry_with_its_tool_timeout(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    (toml_text,) = re.findall(r"^```toml\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(toml_text, encoding="utf-8")

    read = _host("codex", "codex", tmp_path, "mcp", "get", "escalation", "--json", cwd=tmp_path)
    assert read.returncode == 0, read.stdout + read.stderr
    server = json.loads(read.stdout)
    assert server["transport"]["command"] == "mcp-server-escalation"
    assert server["tool_timeout_sec"] == 60
