"""Real faults of a store file, for tests of what the server does when SQLite refuses."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The store file (or folder) refuses writes, as on a read-only file system.

    Its mode is enough for an ordinary user; root writes whatever the mode says, so for
    root the file is made immutable (``chattr +i``), which root's writes respect too.
    """
    if os.geteuid() != 0:
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make {path} read-only for root here: {made.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
