"""What a person's token may report on: the scope its entry in the tokens file gives.

Pure: the hook route checks an event's task and folder with it, the MCP tools and resources
a call's task and that task's project, and what lists records across tasks keeps only the
tasks it admits (``services/scope.py``). A refusal is a ``ScopeRefusal``, facts without words.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

# Which side of a scope refused a report: the task's prefix, no task named at all (a scope
# with prefixes needs one), or the project's folder.
Side = Literal["task", "no_task", "project"]


@dataclass(frozen=True)
class ScopeRefusal:
    """Why a report is outside a token's scope, as facts: the door that refused it words them
    (``rules/wording/scope_refusals.py``), so the agent and the person read names, not reprs."""

    side: Side
    named: str  # the task or the folder as the report named it ("" when none was)
    allowed: tuple[str, ...]  # the scope's prefixes (task, no_task) or folders (project)


@dataclass(frozen=True)
class Scope:
    """Reports only from inside one of ``projects`` (absolute folders) and on a task named with
    one of ``task_prefixes``; an empty tuple leaves that side open."""

    projects: tuple[str, ...] = ()
    task_prefixes: tuple[str, ...] = ()

    def task_refusal(self, task: str | None) -> ScopeRefusal | None:
        """Why a report on ``task`` (None: none named) is outside the scope, or None."""
        if not self.task_prefixes or (task is not None and task.startswith(self.task_prefixes)):
            return None
        return ScopeRefusal("task" if task is not None else "no_task", task or "", self.task_prefixes)

    def project_refusal(self, root: str | None) -> ScopeRefusal | None:
        """Why a report from the project ``root`` is outside the scope, or None."""
        if not self.projects:
            return None
        if root is not None:
            inside = posixpath.normpath(root)  # "/allowed/../other" is /other
            if any(inside == folder or inside.startswith(below) for folder, below in self._folders):
                return None
        return ScopeRefusal("project", root or "", self.projects)

    @cached_property
    def _folders(self) -> tuple[tuple[str, str], ...]:
        """Each project folder normalised, with what starts a path below it: a filtered list
        checks every row, so the check compares strings ("/srv/ci/shopping" is not below
        "/srv/ci/shop": below starts with "/srv/ci/shop/")."""
        folders = [posixpath.normpath(p) for p in self.projects]
        return tuple((f, f.rstrip("/") + "/") for f in folders)

    def refusal(self, task: str, project: str | None) -> ScopeRefusal | None:
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
