"""What the edit gate decides, as a pure function of the task and what the store read.

``check_edit`` (services/progress.py) reads the task, the escalation holding it and which of
the paths the task already modified; ``decide_edit`` says, path by path, whether the edit
may go ahead and why not, which new paths the task counts when it may, which triggers a
refusal fires and what the agent is told. A task that ended, or that an escalation holds,
refuses every path for that reason alone (``inactive_reason``).

The scope and the file limit are also what a progress report fires on (rules/decide/progress.py):
``scope_fires`` and ``file_limit_fires`` word them once for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...models.limits import ENDED_STATUSES
from ...models.tasks import Task
from ...models.thresholds import Thresholds
from ..bounds.evidence import clip, scope_named
from . import triggers
from .decisions import Fires, Wording
from .paths import NormalisedPath, in_scope, normalise_path


@dataclass(frozen=True)
class PathCheck:
    """One path of the call: as given, as the task counts it, and why it is refused (None:
    allowed)."""

    given: str
    normalised: str
    refusal: Wording | None


@dataclass(frozen=True)
class EditDecision:
    """What one ``check_edit`` decides (``decide_edit``)."""

    paths: tuple[PathCheck, ...]
    counted: tuple[str, ...]  # the paths new to the task, recorded as modified when allowed
    fires: tuple[Fires, ...]  # a refusal's triggers
    message: Wording  # what the agent reads when it may go on

    @property
    def allowed(self) -> bool:
        """Every path may be edited."""
        return all(p.refusal is None for p in self.paths)

    @property
    def action(self) -> dict[str, Any]:
        """The call as the task's history records it, with the paths refused (the timeline
        counts them: one refused of two is not "2 paths refused")."""
        refused = [p.normalised for p in self.paths if p.refusal is not None]
        return {"paths": [p.normalised for p in self.paths], "allowed": self.allowed, "refused": refused}


def normalised(paths: list[str], task: Task) -> list[NormalisedPath]:
    """``paths`` as the task counts them: relative to its project, POSIX."""
    return [normalise_path(p, task.project) for p in paths]


def inactive_reason(task: Task, holding_id: int | None) -> Wording | None:
    """Why every path is refused when the task ended or an escalation (``holding_id``) holds
    it; None when the task may edit."""
    if task.status not in ENDED_STATUSES and holding_id is None:
        return None
    return Wording("reason_task_not_active", {"status": task.status, "escalation_id": holding_id or "-"})


def refused_all(reason: Wording, given: list[str], paths: list[NormalisedPath]) -> tuple[PathCheck, ...]:
    """Every path refused for one ``reason``."""
    return tuple(PathCheck(g, n.path, reason) for g, n in zip(given, paths, strict=True))


def decide_edit(
    given: list[str], paths: list[NormalisedPath], *, task: Task, known: set[str]
) -> EditDecision:
    """Each path checked in order: outside the project, outside the scope, or one new file
    too many; ``known`` are those the task already modified (they count once)."""
    checks: list[PathCheck] = []
    outside: list[str] = []
    counted: dict[str, None] = {}  # in the order given; a dict counts a repeated path once
    for g, n in zip(given, paths, strict=True):
        refusal = _outside(g, n, task)
        if refusal is not None:
            outside.append(n.path)
        elif n.path not in known and n.path not in counted:
            counted[n.path] = None
            refusal = _past_limit(n.path, task.counters.files_modified + len(counted), task.thresholds)
        checks.append(PathCheck(g, n.path, refusal))
    proposed = tuple(sorted(counted))
    # Only a refusal fires: a path past the limit, or outside the scope the task checks.
    fires = (scope_fires(sorted(set(outside)), task), _over_limit(task, proposed))
    message = Wording("message_edit_allowed", {"task_id": task.task_id, "count": len(given)})
    return EditDecision(tuple(checks), proposed, tuple(f for f in fires if f is not None), message)


def _outside(given: str, n: NormalisedPath, task: Task) -> Wording | None:
    """Why a path outside the project, or (when the task checks it) its scope, is refused."""
    if not n.inside_root:
        return Wording("reason_outside_root", {"path": given})
    if task.thresholds.spec_deviation_detected and not in_scope(n, task.scope):
        return Wording("reason_out_of_scope", {"path": n.path, "scope": scope_named(task.scope)})
    return None


def _past_limit(path: str, count: int, t: Thresholds) -> Wording | None:
    if count <= t.files_modified_exceeds:
        return None
    return Wording("reason_file_limit", {"path": path, "count": count, "limit": t.files_modified_exceeds})


def _over_limit(task: Task, counted: tuple[str, ...]) -> Fires | None:
    # Every path this call would add is part of the proposal, not only those past the limit:
    # approving must admit the whole change the agent asked for.
    return file_limit_fires(task.counters.files_modified + len(counted), task.thresholds, list(counted))


def scope_fires(outside: list[str], task: Task) -> Fires | None:
    """A change outside the task's scope (or its project), when the task checks its scope."""
    # The criteria and the evidence name the scope as messages do: the escalation's task
    # shows more of it (``context.task``), and the task keeps it whole.
    named = scope_named(task.scope)
    firing = triggers.scope_deviation(outside, named, task.thresholds)
    if firing is None:
        return None
    summary = Wording("trigger_scope_deviation", {"paths": ", ".join(outside), "scope": named or ["(any)"]})
    facts = {
        "scope": named,
        "specification": clip(task.specification),
        "project": task.project,
        "out_of_scope_paths": outside,
    }
    return Fires(firing, summary, facts=facts)


def file_limit_fires(
    count_after: int, t: Thresholds, proposed: list[str], *, reported: bool = False
) -> Fires | None:
    """More distinct files than the limit once the ``proposed`` new ones count; ``reported``:
    they are not proposed but already modified (report_progress names files it changed), so
    the evidence counts them as modified, as tasks list and the agent's report do."""
    firing = triggers.file_limit(count_after, t, proposed)
    if firing is None:
        return None
    limit = t.files_modified_exceeds
    if reported:
        summary = Wording(
            "trigger_file_limit_reported",
            {"count": count_after, "limit": limit, "added": ", ".join(proposed)},
        )
        return Fires(firing, summary, facts={"proposed_files": [], "limit": limit})
    summary = Wording(
        "trigger_file_limit", {"count": count_after, "limit": limit, "proposed": ", ".join(proposed)}
    )
    # The service puts the files already modified ahead of these (a read).
    return Fires(firing, summary, facts={"proposed_files": proposed, "limit": limit})
