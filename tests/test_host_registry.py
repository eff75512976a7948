"""One description per host, registered in one place (``hooks/hosts.py``), and everything
that differs by host read from it.

``problems`` names whatever a registered host lacks or whatever disagrees with the registry:
its module and description, the tools it names (a tool name means one thing whichever host
calls it), the hook command and installer the command line offers, the relay's names (the
relay client imports no third-party module, so it reads the names from the registry, which
imports none either), the routes that take posted hooks, the variables a spooled event
keeps, the hosts whose API errors are never taught to the agent. The worked example of
docs/architecture.md (``tests/test_adding_a_host.py``) runs it on a copy with a fourth host.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server_escalation.adapters.http import hooks as http_hooks
from mcp_server_escalation.cli.parsers import build_parser
from mcp_server_escalation.hooks import hosts, relay, spool
from mcp_server_escalation.hooks.description import HostDescription
from mcp_server_escalation.hooks.events import Answer, host_tools, tool_kind
from mcp_server_escalation.hooks.protocol import encode_answer, parse_payload
from mcp_server_escalation.hooks.triage import project_dir
from mcp_server_escalation.rules.reading import host_errors

SUBCOMMANDS = ("install", "uninstall")
# Imported by the relay client (before anything else, on every hook run) and the registry.
LEAN = ("mcp_server_escalation.hooks.relay", "mcp_server_escalation.hooks.hosts")
THIRD_PARTY = ("pydantic", "anyio", "mcp", "aiosqlite", "starlette", "psycopg")


def _hook_choices() -> tuple[set[str], dict[str, set[str]]]:
    """The ``hook <host>`` runs the command line offers, and the hosts each of
    ``hook install|uninstall`` takes."""
    parser = build_parser("hook")
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    hook = commands.choices["hook"]
    (actions,) = [a for a in hook._actions if isinstance(a, argparse._SubParsersAction)]
    runs = {name for name in actions.choices if name not in (*SUBCOMMANDS, "relay", "daemon")}
    taken = {
        sub: {c for a in actions.choices[sub]._actions if a.dest == "host" for c in a.choices or ()}
        for sub in SUBCOMMANDS
    }
    return runs, taken


def _lean_imports() -> list[str]:
    """The third-party modules loaded by importing the relay client and the registry."""
    probe = (
        f"import importlib, json, sys\nfor name in {LEAN!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {THIRD_PARTY!r})))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(run.stdout)
    return loaded


def problems() -> list[str]:
    """What a registered host lacks, or what disagrees with the registry, in words."""
    found: list[str] = []
    described: list[HostDescription] = []
    for name in hosts.NAMES:
        try:
            described.append(hosts.describe(name))
        except (ImportError, AttributeError, TypeError) as exc:
            found.append(f"{name}: no description in {hosts.module_of(name)} ({exc})")
    kinds: dict[str, tuple[str, str]] = {}
    for host in described:
        for kind, tools in (
            ("edit", host.edit_tools),
            ("shell", host.shell_tools),
            ("read", host.read_tools),
        ):
            for tool in tools:
                other = kinds.setdefault(tool, (kind, host.name))
                if other[0] != kind:
                    found.append(f"{tool}: a {kind} tool of {host.name} but a {other[0]} tool of {other[1]}")
                if tool_kind(tool, servers=()) != kind:
                    found.append(f"{host.name}: {tool} is not classified as a {kind} tool")
        if not host.handlers:
            found.append(f"{host.name}: no event for the installer to register")
        for guest in host.guests:
            if guest not in hosts.NAMES:
                found.append(f"{host.name}: its guest {guest} is not registered")
        for variable in host.project_variables:
            if variable not in spool.kept_variables():
                found.append(f"{host.name}: {variable} is not kept with a spooled event")
        if host.api_errors and host.name not in host_errors.HOSTS:
            found.append(f"{host.name}: reports API errors but is not in rules/reading/host_errors.HOSTS")
    runs, taken = _hook_choices()
    if runs != set(hosts.NAMES):
        found.append(
            f"the command line's hook runs {sorted(runs)} are not the registry's {list(hosts.NAMES)}"
        )
    for sub, names in taken.items():
        if names != set(hosts.NAMES):
            found.append(f"hook {sub} takes {sorted(names)}, not the registry's {list(hosts.NAMES)}")
    if relay.HOSTS != hosts.NAMES:
        found.append(f"the relay forwards {list(relay.HOSTS)}, not the registry's {list(hosts.NAMES)}")
    for name in host_errors.HOSTS:
        if name not in hosts.NAMES:
            found.append(f"rules/reading/host_errors.HOSTS names {name}, which is not registered")
    posting = tuple(host.name for host in described if host.http)
    if posting != http_hooks.HTTP_HOSTS:
        found.append(f"the hook routes take {list(http_hooks.HTTP_HOSTS)}, not {list(posting)}")
    loaded = _lean_imports()
    if loaded:
        found.append(f"the relay client and the registry load {', '.join(loaded)}")
    return found


def test_every_registered_host_is_described_once_and_read_from_its_description() -> None:
    assert problems() == []


def test_the_checker_itself_names_what_a_host_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    # What is derived from the registry as it is (the tool table, the spool's variables, the
    # command line's module), before a name without a module joins it.
    host_tools()
    spool.kept_variables()
    _hook_choices()
    monkeypatch.setattr(hosts, "NAMES", (*hosts.NAMES, "pi-agent"))
    hosts.describe.cache_clear()
    try:
        found = problems()
    finally:
        hosts.describe.cache_clear()
    assert any(
        line.startswith("pi-agent: no description in mcp_server_escalation.hooks.pi_agent") for line in found
    )
    assert any(line.startswith("the command line's hook runs") for line in found), found
    assert any(line.startswith("the relay forwards") for line in found), found


def test_a_payload_is_read_and_answered_by_the_host_whose_entry_ran() -> None:
    pre = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "make"}}
    cursor_pre = {"hook_event_name": "preToolUse", "tool_name": "Shell", "cursor_version": "1.7"}
    said = Answer(deny="wait")
    for entry, payload, host in (
        ("claude-code", pre, "claude-code"),
        ("codex", pre, "codex"),
        ("claude-code", cursor_pre, "cursor"),  # Cursor runs Claude Code's hooks
        ("cursor", cursor_pre, "cursor"),
    ):
        event = parse_payload(payload, entry)
        assert (event.host, event.kind) == (host, "pre_tool")
        answer = encode_answer(said, event, entry)
        assert answer is not None
        native = hosts.describe(host).encode(said, event)
        assert native is not None
        assert answer.items() >= native.items()  # its own form, always
    both = encode_answer(said, parse_payload(cursor_pre, "claude-code"), "claude-code")
    assert both is not None
    assert {"permission", "hookSpecificOutput"} <= set(both)  # a guest's answer in both forms


def test_the_project_is_found_where_each_host_says(tmp_path: Path) -> None:
    variable, root, cwd = (tmp_path / name for name in ("variable", "root", "cwd"))
    for folder in (variable, root, cwd):
        folder.mkdir()
    claude = parse_payload({"hook_event_name": "Stop", "cwd": str(cwd)}, "claude-code")
    cursor = parse_payload(
        {"hook_event_name": "stop", "cursor_version": "1", "workspace_roots": [str(root)], "cwd": str(cwd)},
        "cursor",
    )
    assert project_dir(claude, {"CLAUDE_PROJECT_DIR": str(variable)}) == str(variable)
    assert project_dir(claude, {}) == str(cwd)
    assert project_dir(cursor, {"CURSOR_PROJECT_DIR": str(variable)}) == str(variable)
    assert project_dir(cursor, {"CLAUDE_PROJECT_DIR": str(variable)}) == str(root)  # its root first
