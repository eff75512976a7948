"""Path normalisation and scope globs.

Paths are compared as POSIX paths relative to the project root with ``.`` and ``..``
resolved lexically (the file may not exist yet: ``check_edit`` runs before the edit).
Backslashes are read as separators so a Windows agent's paths count like anyone else's.
A path that resolves outside the root is never in scope.

Scope globs: ``*`` and ``?`` stay within one path segment, ``**`` spans any number of
segments (``src/**/test_*.py``), ``[abc]`` is a character class. A glob with no wildcard,
or one ending in ``/``, also covers everything below it (``src/auth`` = ``src/auth/**``).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class NormalisedPath:
    """A path as the task counts it; ``inside_root`` is False when it leaves the project."""

    path: str
    inside_root: bool


def normalise_path(path: str, project_root: str) -> NormalisedPath:
    """``path`` relative to ``project_root``, POSIX, with ``..`` resolved lexically."""
    root = posixpath.normpath(project_root.replace("\\", "/"))
    candidate = path.strip().replace("\\", "/")
    if re.match(r"^[A-Za-z]:/", candidate) or candidate.startswith("/"):
        absolute = posixpath.normpath(candidate)
    else:
        absolute = posixpath.normpath(posixpath.join(root, candidate))
    if absolute == root:
        return NormalisedPath(".", inside_root=True)
    prefix = root if root.endswith("/") else root + "/"
    if absolute.startswith(prefix):
        return NormalisedPath(absolute[len(prefix) :], inside_root=True)
    return NormalisedPath(absolute, inside_root=False)


@lru_cache(maxsize=1024)
def _glob_regex(glob: str) -> re.Pattern[str]:
    pattern = glob.strip().replace("\\", "/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    subtree = pattern.endswith("/") or not any(ch in pattern for ch in "*?[")
    pattern = pattern.rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    suffix = "(?:/.*)?" if subtree else ""
    return re.compile("^" + "".join(out) + suffix + "$")


def in_scope(path: NormalisedPath, scope: list[str] | tuple[str, ...]) -> bool:
    """True when the path is inside the root and matches a scope glob (empty scope: any)."""
    if not path.inside_root:
        return False
    if not scope:
        return True
    return any(_glob_regex(glob).match(path.path) for glob in scope)
