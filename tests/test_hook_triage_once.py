"""A hook event's tool kind, project root and plan are worked out once, then passed on.

Triage decides whether an event needs the store at all; the runner then records it. Both
need the same three facts about the event, and working them out twice is twice the cost on
the hook's hot path and two places that could come to disagree. The hook's own path
(``dispatch.prepare`` then ``dispatch.answer``) runs in this process on a real store, with
each of the three pure functions counted wherever the hook modules reach it.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import make_settings
from hooks_support import PROJECT, PYTEST_FAIL, bash_failure, count, post_edit, pre_edit
from mcp_server_escalation.hooks import events, plan, triage
from mcp_server_escalation.hooks.dispatch import answer, prepare
from mcp_server_escalation.services.runtime import open_runtime

COUNTED = {"plan_post": plan.plan_post, "tool_kind": events.tool_kind, "project_dir": triage.project_dir}
HOOK_MODULES = ("dispatch", "triage", "plan", "events", "runner", "approvals")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each of the three was called, from any hook module that holds it."""
    counted: Counter[str] = Counter()

    def counting(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counted[name] += 1
            return function(*args, **kwargs)

        return wrapper

    for module_name in HOOK_MODULES:
        module = importlib.import_module(f"mcp_server_escalation.hooks.{module_name}")
        for name, function in COUNTED.items():
            if getattr(module, name, None) is function:
                monkeypatch.setattr(module, name, counting(name, function))
    return counted


async def _through_the_hook(db: str, payload: dict[str, Any]) -> str:
    settings = make_settings(db)
    async with open_runtime(settings) as rt:
        prepared = prepare(json.dumps(payload).encode(), settings, {}, PROJECT)
        assert prepared is not None
        return await answer(rt, "claude-code", prepared, settings)


async def test_a_finished_edit_is_planned_once_and_recorded(tmp_path: Path, calls: Counter[str]) -> None:
    db = str(tmp_path / "once.db")
    await _through_the_hook(db, post_edit(f"{PROJECT}/app.py"))
    assert count(db, "progress_reports") == 1  # the runner did record it
    assert calls == Counter(plan_post=1, tool_kind=1, project_dir=1)


async def test_a_failed_test_run_is_planned_once_and_recorded(tmp_path: Path, calls: Counter[str]) -> None:
    db = str(tmp_path / "once.db")
    await _through_the_hook(db, bash_failure("python -m pytest -q", PYTEST_FAIL))
    assert count(db, "failures") == 1
    assert calls == Counter(plan_post=1, tool_kind=1, project_dir=1)


async def test_an_edit_about_to_run_is_classified_once(tmp_path: Path, calls: Counter[str]) -> None:
    db = str(tmp_path / "once.db")
    await _through_the_hook(db, pre_edit(f"{PROJECT}/app.py"))
    assert calls == Counter(tool_kind=1, project_dir=1)
