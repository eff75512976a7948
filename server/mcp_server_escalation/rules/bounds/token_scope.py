"""What a person's token may report on: the scope its entry in the tokens file gives.

Pure: the hook route checks an event's task and folder with it, the MCP tools and resources
a call's task and that task's project, and what lists records across tasks keeps only the
tasks it admits (``services/scope.py``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Scope:
    """Reports only from inside one of ``projects`` (absolute folders) and on a task named with
    one of ``task_prefixes``; an empty tuple leaves that side open."""

    projects: tuple[str, ...] = ()
    task_prefixes: tuple[str, ...] = ()

    def task_refusal(self, task: str | None, naming: str = "name one in X-Escalation-Task") -> str | None:
        """Why a report on ``task`` (None: none named) is outside the scope, or None;
        ``naming`` says where the caller names a task."""
        if not self.task_prefixes or (task is not None and task.startswith(self.task_prefixes)):
            return None
        allowed = ", ".join(repr(p) for p in self.task_prefixes)
        if task is None:
            return f"this token reports only on tasks starting with {allowed}: {naming}"
        return f"task {task!r} is outside this token's scope: tasks starting with {allowed}"

    def project_refusal(self, root: str | None) -> str | None:
        """Why a report from the project ``root`` is outside the scope, or None."""
        if not self.projects:
            return None
        if root is not None:
            inside = posixpath.normpath(root)  # "/allowed/../other" is /other
            if any(inside == folder or inside.startswith(below) for folder, below in self._folders):
                return None
        allowed = ", ".join(self.projects[:5]) + (" ..." if len(self.projects) > 5 else "")
        return f"project {(root or '')[:200]!r} is outside this token's scope: folders {allowed}"

    @cached_property
    def _folders(self) -> tuple[tuple[str, str], ...]:
        """Each project folder normalised, with what starts a path below it: a filtered list
        checks every row, so the check compares strings ("/srv/ci/shopping" is not below
        "/srv/ci/shop": below starts with "/srv/ci/shop/")."""
        folders = [posixpath.normpath(p) for p in self.projects]
        return tuple((f, f.rstrip("/") + "/") for f in folders)

    def refusal(self, task: str, project: str | None) -> str | None:
        """Why the stored task ``task`` of ``project`` (None: none stored) is outside the
        scope, or None: the one check behind every refusal and every filtered list."""
        return self.task_refusal(task) or (self.project_refusal(project) if project else None)

    def admits(self, task: str, project: str | None) -> bool:
        """Whether a scoped token may see the stored task ``task`` of ``project``."""
        return self.refusal(task, project) is None

    def claims(self) -> dict[str, list[str]]:
        """The scope as an access token's claims (what a tool call reads it back from)."""
        return {"projects": list(self.projects), "task_prefixes": list(self.task_prefixes)}

    @classmethod
    def from_claims(cls, claims: dict[str, object] | None) -> Scope | None:
        """The scope ``claims`` carry, or None for a token without one."""
        if not claims:
            return None
        projects, prefixes = claims.get("projects") or [], claims.get("task_prefixes") or []
        if not isinstance(projects, list) or not isinstance(prefixes, list):
            return None
        return cls(tuple(map(str, projects)), tuple(map(str, prefixes))) if projects or prefixes else None
