"""Every escalation type is whole: one record, and everything its record names exists.

A trigger's record (``rules/triggers/records.py``) is where every table keyed by type
comes from. What a record names lives elsewhere: its templates in ``prompts/``, its
evidence's gatherer in a service, its view in the CLI and in the console's template, its
row in docs/triggers.md, its counters in ``Counters`` and its thresholds in
``Thresholds``. ``problems`` names whatever a type lacks, so a new type that forgets one
fails here with what to add, not with a ``KeyError`` at its first firing.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import get_args

from mcp_server_escalation import services
from mcp_server_escalation.cli.evidence_view import VIEWS
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.models.limits import EscalationType
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.rules.decide import triggers
from mcp_server_escalation.rules.operators.verdicts import THRESHOLD_OF
from mcp_server_escalation.rules.triggers.records import (
    BY_TYPE,
    GENERIC_VIEW,
    NO_EVIDENCE,
    RECORDS,
    TriggerRecord,
)
from mcp_server_escalation.rules.wording.words import KIND_WORDS

ROOT = Path(__file__).resolve().parents[1]
CONSOLE_EVIDENCE = (
    ROOT / "server" / "mcp_server_escalation" / "adapters" / "console" / "templates" / "evidence.html"
)
TRIGGERS_DOC = ROOT / "docs" / "triggers.md"


def _gatherers() -> frozenset[str]:
    """The names every service registers a gatherer under (each service module imported)."""
    for module in pkgutil.iter_modules(services.__path__):
        importlib.import_module(f"{services.__name__}.{module.name}")
    from mcp_server_escalation.services.gathering import GATHERERS

    return frozenset(GATHERERS)


def _console_views() -> frozenset[str]:
    """The views the console's evidence template draws (its ``view == "..."`` branches)."""
    return frozenset(re.findall(r'view == "([^"]+)"', CONSOLE_EVIDENCE.read_text(encoding="utf-8")))


def _doc_rows() -> dict[str, list[str]]:
    """The rows of docs/triggers.md's table of escalation types, by type: their cells."""
    rows: dict[str, list[str]] = {}
    for line in TRIGGERS_DOC.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `([a-z_]+)` \| (.*) \|$", line)
        if found and " | " in found.group(2):
            rows[found.group(1)] = [cell.strip() for cell in found.group(2).split(" | ")]
    return rows


@dataclass(frozen=True)
class World:
    """Everything outside the records that a record's names must find."""

    types: frozenset[str]
    templates: frozenset[str]
    gatherers: frozenset[str]
    cli_views: frozenset[str]
    console_views: frozenset[str]
    doc_rows: dict[str, list[str]]


def shipped() -> World:
    book = PromptBook.load(data_dir("prompts"))
    return World(
        types=frozenset(get_args(EscalationType)),
        templates=frozenset(book.versions()),
        gatherers=_gatherers(),
        cli_views=frozenset(VIEWS),
        console_views=_console_views(),
        doc_rows=_doc_rows(),
    )


def problems(records: tuple[TriggerRecord, ...], world: World) -> list[str]:
    """What each type lacks, one line each, named as what to add."""
    found = [
        f"{t}: no record in rules/triggers/records.py"
        for t in sorted(world.types - {r.type for r in records})
    ]
    for r in records:
        found.extend(_record_problems(r, world))
    return found


def _record_problems(r: TriggerRecord, world: World) -> list[str]:
    said = f"{r.type}:"
    found = [] if r.type in world.types else [f"{said} not an EscalationType in models/limits.py"]
    found += [
        f"{said} template {name} not in prompts/" for name in r.templates if name not in world.templates
    ]
    if r.evidence != NO_EVIDENCE and r.evidence not in world.gatherers:
        found.append(f"{said} no gatherer registered for its evidence {r.evidence!r} (services/gathering.py)")
    if r.view != GENERIC_VIEW and r.view not in world.cli_views:
        found.append(f"{said} its view {r.view!r} is not in cli/evidence_view.py's VIEWS")
    if r.view != GENERIC_VIEW and r.view not in world.console_views:
        found.append(f"{said} its view {r.view!r} is not drawn by the console's templates/evidence.html")
    row = world.doc_rows.get(r.type)
    if row is None:
        found.append(f"{said} no row in docs/triggers.md's table of escalation types")
    elif row[:2] != [r.words, ", ".join(r.answers)]:
        found.append(
            f"{said} its row in docs/triggers.md says {row[:2]}, the record {[r.words, ', '.join(r.answers)]}"
        )
    counters = set(Counters.model_fields)
    thresholds = set(Thresholds.model_fields)
    found += [f"{said} resets {name}, no counter" for name in r.resets_on_ack if name not in counters]
    for counter, threshold in r.limits:
        if counter not in counters or threshold not in thresholds:
            found.append(f"{said} limit ({counter}, {threshold}) names no counter or no threshold")
    raised = re.findall(r"[a-z]+(?:_[a-z]+)+", r.raise_on_false_alarm or "")
    found += [
        f"{said} a false alarm raises {name}, no threshold" for name in raised if name not in thresholds
    ]
    if (r.raise_on_false_alarm is None) != r.raised_by_agent:
        found.append(f"{said} only a kind the agent raises has no threshold to raise")
    return found


def test_every_escalation_type_has_a_whole_record() -> None:
    assert problems(RECORDS, shipped()) == []


def test_a_new_type_that_lacks_its_parts_is_told_each_one() -> None:
    world = shipped()
    bare = replace(
        BY_TYPE["test_stall"],
        type="tool_loop",  # type: ignore[arg-type]  # a type models/limits.py does not know yet
        templates={"trigger_tool_loop": ("count", "threshold")},
        evidence="loop calls",
        view="loop calls",
        resets_on_ack=("tool_loop_calls",),
        limits=(("tool_loop_calls", "tool_loop_after"),),
        raise_on_false_alarm="tool_loop_after",
    )
    told = problems((*RECORDS, bare), replace(world, types=world.types | {"unrecorded"}))

    assert told == [
        "unrecorded: no record in rules/triggers/records.py",
        "tool_loop: not an EscalationType in models/limits.py",
        "tool_loop: template trigger_tool_loop not in prompts/",
        "tool_loop: no gatherer registered for its evidence 'loop calls' (services/gathering.py)",
        "tool_loop: its view 'loop calls' is not in cli/evidence_view.py's VIEWS",
        "tool_loop: its view 'loop calls' is not drawn by the console's templates/evidence.html",
        "tool_loop: no row in docs/triggers.md's table of escalation types",
        "tool_loop: resets tool_loop_calls, no counter",
        "tool_loop: limit (tool_loop_calls, tool_loop_after) names no counter or no threshold",
        "tool_loop: a false alarm raises tool_loop_after, no threshold",
    ]


def test_a_counting_type_on_the_generic_evidence_and_view_needs_no_gatherer_or_view_of_its_own() -> None:
    world = shipped()
    counting = replace(BY_TYPE["budget"], type="test_stall", evidence="counted", view=GENERIC_VIEW)
    assert [p for p in problems((counting,), world) if "gatherer" in p or "view" in p] == []


def test_the_tables_keyed_by_type_are_the_records() -> None:
    assert list(KIND_WORDS) == [r.type for r in RECORDS] == list(triggers.RESPONSE_OPTIONS)
    assert {r.type: r.raise_on_false_alarm for r in RECORDS if not r.raised_by_agent} == THRESHOLD_OF
    # As the operator's views listed them before the records: same order, same pairs.
    assert triggers.COUNTER_LIMITS == (
        ("consecutive_same_error", "same_error_repeated"),
        ("verification_attempts", "total_verification_attempts"),
        ("attempts_without_file_change", "no_file_changes_after_attempts"),
        ("test_runs_without_improvement", "no_test_improvement_after"),
        ("files_modified", "files_modified_exceeds"),
        ("tool_calls", "max_tool_calls"),
        ("failing_test_runs", "max_failing_test_runs"),
    )


def test_an_acknowledged_answer_starts_each_measured_counter_again_at_a_new_tasks_value() -> None:
    assert triggers.ack_resets(["repeated_error"]) == {
        "consecutive_same_error": 0,
        "last_fingerprint": None,
        "last_failed_operation": None,
    }
    assert triggers.ack_resets(["test_stall", "file_limit"]) == {"test_runs_without_improvement": 0}
    assert triggers.ack_resets(["ask_human", "scope_deviation"]) == {}
