#!/usr/bin/env python3
"""Interoperability check: the official MCP Inspector CLI against the installed server.

Installs ``@modelcontextprotocol/inspector`` (0.15.0 by default: the newest release whose
``engines`` accept Node 20) from npm into a temporary folder, then drives the installed
``mcp-server-escalation`` console script over stdio with it, on a throw-away store: lists
tools, resources, resource templates and prompts, calls ``start_task`` and
``record_failure`` (a missing dependency, which escalates at once), reads the escalation
and the task as resources and gets two prompts. Any failure, including a tool result with
``isError`` (Inspector 0.15 exits 0 on those), fails the check with exit status 1.

    python scripts/inspector_check.py                     # the console script on PATH
    python scripts/inspector_check.py --server /path/to/mcp-server-escalation --keep
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TASK = "inspector-check"
TOOLS = {
    "start_task",
    "record_failure",
    "report_progress",
    "check_edit",
    "get_escalation",
    "raise_escalation",
}
PROMPTS = {"retry_with_feedback", "fix_review_findings", "escalation_briefing", "resume_after_response"}


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class CheckFailed(Exception):
    """One step of the check went wrong; the message says which and how."""


def _server(given: str | None) -> str:
    if given:
        return given
    found = shutil.which("mcp-server-escalation")
    if found:
        return found
    beside = Path(sys.executable).parent / "mcp-server-escalation"
    if beside.exists():
        return str(beside)
    raise CheckFailed("mcp-server-escalation is not installed (not on PATH, not beside this Python)")


def _install(folder: Path, version: str) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise CheckFailed("npm is not on PATH")
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 (fixed arguments)
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"@modelcontextprotocol/inspector@{version}",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise CheckFailed(f"npm install failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    binary = folder / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        raise CheckFailed(f"npm installed no {binary}")
    installed = json.loads(
        (folder / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json").read_text()
    )["version"]
    _say(f"ok    installed @modelcontextprotocol/inspector {installed} in {time.monotonic() - started:.1f} s")
    return binary


class Inspector:
    """``mcp-inspector --cli SERVER --db STORE --method ...``, one server process per call."""

    def __init__(self, binary: Path, server: str, store: Path) -> None:
        self.binary = binary
        self.server = server
        self.store = store

    def __call__(self, method: str, *args: str) -> dict[str, Any]:
        command = [str(self.binary), "--cli", self.server, "--db", str(self.store), "--method", method, *args]
        done = subprocess.run(  # noqa: S603 (our own binary and arguments)
            command, capture_output=True, text=True, timeout=120, check=False, cwd=self.binary.parents[2]
        )
        if done.returncode != 0:
            raise CheckFailed(
                f"{method} {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-2000:]}"
            )
        try:
            reply: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise CheckFailed(f"{method}: not JSON on stdout: {done.stdout[:500]!r}") from exc
        if reply.get("isError"):
            raise CheckFailed(
                f"{method} {' '.join(args)}: the tool reported an error: {reply.get('content')}"
            )
        return reply


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)


def run_checks(inspector: Inspector) -> None:
    """Every step, printing one line each."""
    tools = {t["name"]: t for t in inspector("tools/list")["tools"]}
    _check(set(tools) >= TOOLS, f"tools/list lacks {sorted(TOOLS - set(tools))}")
    _check(all("outputSchema" in tools[name] for name in TOOLS), "a tool has no outputSchema")
    _say(f"ok    tools/list: {len(tools)} tools, each with an output schema")

    resources = [r["uri"] for r in inspector("resources/list")["resources"]]
    _check("escalation://pending" in resources, f"resources/list: {', '.join(resources) or 'none'}")
    templates = [t["uriTemplate"] for t in inspector("resources/templates/list")["resourceTemplates"]]
    _check(
        {"escalation://{escalation_id}", "task://{task_id}"} <= set(templates),
        f"templates: {', '.join(templates) or 'none'}",
    )
    _say(f"ok    resources/list: {', '.join(resources)}; resources/templates/list: {', '.join(templates)}")

    prompts = {p["name"] for p in inspector("prompts/list")["prompts"]}
    _check(prompts >= PROMPTS, f"prompts/list lacks {', '.join(sorted(PROMPTS - prompts))}")
    _say(f"ok    prompts/list: {', '.join(sorted(prompts))}")

    started = inspector(
        "tools/call", "--tool-name", "start_task", "--tool-arg", "title=Inspector check", f"task_id={TASK}"
    )["structuredContent"]
    _check(started["task_id"] == TASK and started["status"] == "active", f"start_task: {json.dumps(started)}")
    _say(f"ok    tools/call start_task: task {TASK} is {started['status']}, directive {started['directive']}")

    failed = inspector(
        "tools/call",
        "--tool-name",
        "record_failure",
        "--tool-arg",
        f"task_id={TASK}",
        "message=ModuleNotFoundError: No module named 'lodash'",
        # Declared: a blocker read off the message alone waits for it to repeat.
        "signal_type=missing_dependency",
        "file=src/app.py",
        "line=3",
    )["structuredContent"]
    escalation = failed["escalation"]
    _check(
        escalation is not None and escalation["type"] == "external_blocker",
        f"record_failure: {json.dumps(failed)}",
    )
    escalation_id = escalation["escalation_id"]
    _say(
        f"ok    tools/call record_failure: {failed['failure']['signal_type']}, escalation {escalation_id} "
        f"({escalation['type']}), directive {failed['directive']}"
    )

    read = inspector("resources/read", "--uri", f"escalation://{escalation_id}")["contents"][0]
    shown = json.loads(read["text"])
    _check(
        shown["escalation_id"] == escalation_id and shown["status"] == "pending",
        f"resource: {json.dumps(shown)}",
    )
    task = json.loads(inspector("resources/read", "--uri", f"task://{TASK}")["contents"][0]["text"])
    _check(task["task"]["status"] == "paused", f"task resource: {json.dumps(task)}")
    _say(f"ok    resources/read escalation://{escalation_id} ({shown['status']}) and task://{TASK} (paused)")

    briefing = inspector(
        "prompts/get",
        "--prompt-name",
        "escalation_briefing",
        "--prompt-args",
        f"escalation_id={escalation_id}",
    )["messages"]
    text = briefing[0]["content"]["text"]
    _check("external blocker" in text, f"escalation_briefing: {text[:300]}")  # the kind in words
    retry = inspector(
        "prompts/get", "--prompt-name", "retry_with_feedback", "--prompt-args", f"task_id={TASK}", "step=main"
    )["messages"]
    _check(bool(retry[0]["content"]["text"]), "retry_with_feedback is empty")
    _say(f"ok    prompts/get escalation_briefing ({len(text)} chars) and retry_with_feedback")


def main() -> int:
    """Install the Inspector, run the checks, clean up."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--server", help="the console script to test (default: mcp-server-escalation on PATH)"
    )
    parser.add_argument("--inspector-version", default="0.15.0")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="inspector-check-"))
    try:
        server = _server(args.server)
        _say(f"MCP Inspector interoperability check: {server}")
        binary = _install(folder, args.inspector_version)
        run_checks(Inspector(binary, server, folder / "store.db"))
    except (CheckFailed, subprocess.TimeoutExpired, OSError, KeyError, TypeError) as exc:
        sys.stderr.write(f"FAIL  {type(exc).__name__}: {exc}\n")
        return 1
    finally:
        if args.keep:
            _say(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    _say("MCP Inspector check passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
