"""The real client packages people drive this server with, each in an environment of its own.

Their pins conflict with ours (langchain-mcp-adapters requires ``mcp`` 1.x; we run on 2.x), so
a test does not import them: it builds a virtual environment per client under a cache folder
(``ESCALATION_TEST_CACHE``, else ``$XDG_CACHE_HOME/mcp-server-escalation-tests``, else
``~/.cache/mcp-server-escalation-tests``), pip-installs the pinned releases from PyPI into it
once, and reuses it while the pins are the same (the folder is named by them). A driver script
of ``tests/clients/`` then runs in that environment, drives our installed console script over
stdio through the client's own session objects, and prints what it saw as JSON.

npm packages (the TypeScript SDK, the hosts' own command-line tools) are kept the same way:
pinned, installed once with ``npm`` into a folder of that cache named by the pins
(``npm_modules``).

A client that cannot be installed fails the test that needs it: it is never skipped.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# What a user gets today from `pip install <client>`, pinned: the client, and the `mcp`
# release it resolves to (openai-agents works with both majors and takes 2.x).
PINS: dict[str, tuple[str, ...]] = {
    "openai-agents": ("openai-agents==0.24.0", "mcp==2.3.0"),
    "langchain-mcp-adapters": ("langchain-mcp-adapters==0.3.2", "langchain-core==1.8.3", "mcp==1.30.0"),
    "fastmcp": ("fastmcp==4.2.3", "mcp==2.3.0"),
    # The client's side of the MCP tasks extension; it pins its fastmcp (slim) release exactly.
    "fastmcp-tasks": ("fastmcp-tasks==4.1.4", "fastmcp-slim==4.1.4", "mcp==2.3.0"),
    # what runs an MCP bundle of type "uv" (manifest.json): the host installs the bundle's
    # dependencies with it
    "uv": ("uv==0.13.9",),
}
# The npm packages, pinned the same way: what `npm install <package>` gives a user today.
NPM_PINS: dict[str, tuple[str, ...]] = {
    "typescript-sdk": ("@modelcontextprotocol/sdk@1.32.2",),
    "claude-code": ("@anthropic-ai/claude-code@2.1.332",),
    "mcpb": ("@anthropic-ai/mcpb@2.1.2",),
    "gemini-cli": ("@google/gemini-cli@0.61.0",),
    "codex": ("@openai/codex@0.171.0",),
}
DRIVERS = Path(__file__).parent / "clients"
INSTALL_TIMEOUT = 900  # a first install on a cold pip cache, two cores shared
DRIVE_TIMEOUT = 300  # a driver's whole run; each of its waits is bounded on its own
# Read at import, before conftest points HOME at each test's own folder: the environments and
# pip's download cache are kept in the real one, between runs.
_REAL_HOME = Path.home()
_REAL_CACHE = os.environ.get("XDG_CACHE_HOME")


def cache_root() -> Path:
    """Where the client environments are kept between runs."""
    chosen = os.environ.get("ESCALATION_TEST_CACHE")
    if chosen:
        return Path(chosen)
    base = _REAL_CACHE or str(_REAL_HOME / ".cache")
    return Path(base) / "mcp-server-escalation-tests"


def _built_once(name: str, pins: tuple[str, ...], build: Callable[[Path, tuple[str, ...]], None]) -> Path:
    """``name``'s folder in the cache, built by ``build`` on first use (one builder at a time)."""
    digest = hashlib.sha256("\n".join((sys.version, *pins)).encode()).hexdigest()[:12]
    folder = cache_root() / f"{name}-{digest}"
    ready = folder / "ready"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test worker may be building it
        if not ready.exists():
            build(folder, pins)
            ready.write_text("\n".join(pins) + "\n")
    return folder


def client_python(client: str) -> Path:
    """The Python of ``client``'s environment, built on first use."""
    return _built_once(client, PINS[client], _build) / "bin" / "python"


def npm_modules(package: str) -> Path:
    """The ``node_modules`` folder holding ``package``'s pinned release, installed on first use."""
    return _built_once(package, NPM_PINS[package], _npm_install) / "node_modules"


def _npm_install(folder: Path, pins: tuple[str, ...]) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise AssertionError(f"npm is not on PATH: cannot install {' '.join(pins)}")
    folder.mkdir(parents=True, exist_ok=True)
    installed = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(folder), *pins],
        check=False,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        env={**os.environ, "HOME": str(_REAL_HOME)},  # npm's download cache is kept in the real one
    )
    if installed.returncode != 0:
        raise AssertionError(f"cannot install {' '.join(pins)}:\n{installed.stdout}\n{installed.stderr}")


def _build(folder: Path, pins: tuple[str, ...]) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True, timeout=120)
    installed = subprocess.run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", *pins],
        check=False,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        env={**os.environ, "HOME": str(_REAL_HOME)},
    )
    if installed.returncode != 0:
        raise AssertionError(f"cannot install {' '.join(pins)}:\n{installed.stdout}\n{installed.stderr}")


def drive(client: str, driver: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run ``tests/clients/<driver>`` in ``client``'s environment; what it printed, as JSON."""
    command = [str(client_python(client)), str(DRIVERS / driver), *args]
    return _run_driver(command, f"{driver} in {client}", env)


def drive_node(package: str, driver: str, *args: str) -> Any:
    """Run ``tests/clients/<driver>`` with node, given the ``node_modules`` holding
    ``package`` as its first argument; what it printed, as JSON."""
    node = shutil.which("node")
    if node is None:
        raise AssertionError(f"node is not on PATH: cannot run {driver}")
    command = [node, str(DRIVERS / driver), str(npm_modules(package)), *args]
    return _run_driver(command, f"{driver} with {' '.join(NPM_PINS[package])}", None)


def _run_driver(command: list[str], what: str, env: dict[str, str] | None) -> Any:
    ran = subprocess.run(
        command,
        check=False,
        capture_output=True,
        text=True,
        timeout=DRIVE_TIMEOUT,
        env={**os.environ, **(env or {})},
    )
    if ran.returncode != 0:
        raise AssertionError(f"{what} exited {ran.returncode}:\n{ran.stdout}\n{ran.stderr}")
    return json.loads(ran.stdout.strip().splitlines()[-1])
