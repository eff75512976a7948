"""The feedback budget: the newest-first fill keeps exactly what dropping the oldest
entries one by one until the text fits would keep.

``rules.guidance.feedback.render_sections`` renders only the entries that fit, reading the retry
entries the store keeps collapsed (migration 8) newest first; this checks it against the
plain definition below (collapse the raw attempts with ``str.strip``, render every entry,
drop the oldest while too long) on random histories, with the shipped prompts and with
terse entries under a long omission notice (the one case where leaving the notice out can
outweigh older entries).
"""

from __future__ import annotations

import itertools
import re
import shutil
import sqlite3
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import migrate_by_hand
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.models.feedback import CycleFeedback, FindingEntry, HumanResponse, RetryEntry
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.rules.guidance.feedback import render_sections
from mcp_server_escalation.store.feedback import newest_retry_entries, retry_entry_count
from mcp_server_escalation.store.migrations import WHITESPACE_CODES

STEP = "gen"
TASKS = itertools.count(1)


class Rejected(NamedTuple):
    """A step's rejected attempts as recorded, oldest first, column by column."""

    numbers: tuple[int, ...]
    feedback: tuple[str, ...]
    guards: tuple[str | None, ...]
    at: tuple[str, ...]


@pytest.fixture(scope="module")
def store() -> sqlite3.Connection:
    """A migrated in-memory store: its trigger collapses the attempts a test records."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate_by_hand(conn)
    return conn


def _record(store: sqlite3.Connection, rejected: Rejected) -> str:
    """A new task with ``rejected`` recorded as its step's attempts; returns its id."""
    task_id = f"t{next(TASKS)}"
    store.execute(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json, created_at,"
        " updated_at) VALUES (?, 't', '/p', 'a', 'active', '{}', 'x', 'x')",
        (task_id,),
    )
    for number, feedback, guard, at in zip(*rejected, strict=True):
        store.execute(
            "INSERT INTO attempts (task_id, step, attempt_number, cycle, status, feedback, guard,"
            " agent_id, generation, created_at) VALUES (?, ?, ?, 1, 'rejected', ?, ?, 'a', 1, ?)",
            (task_id, STEP, number, feedback, guard, at),
        )
    return task_id


def _terse_book(target: Path) -> PromptBook:
    """The shipped prompts with one-placeholder entries and a long notice."""
    shutil.copytree(data_dir("prompts"), target)
    path = target / "feedback.toml"
    text = path.read_text(encoding="utf-8")
    replacements = {
        "feedback_retry_entry": '"{feedback}"',
        "feedback_human_entry": '"{content}"',
        "feedback_omitted": '"({omitted} older entries were left out of this feedback to stay within '
        '{max_chars} characters; ask again with a larger max_chars to read them.)"',
    }
    for name, value in replacements.items():
        pattern = rf'(\[templates\.{name}\]\ntext = )(""".*?"""|".*?")'
        text, count = re.subn(pattern, lambda m, v=value: m.group(1) + v, text, flags=re.S)
        assert count == 1, name
    path.write_text(text, encoding="utf-8")
    return PromptBook.load(target)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PromptBook]:
    return {
        "shipped": PromptBook.load(data_dir("prompts")),
        "terse": _terse_book(tmp_path_factory.mktemp("prompts") / "prompts"),
    }


def _reference(
    prompts: PromptBook,
    escalations: list[CycleFeedback],
    rejected: Rejected,
    findings: list[FindingEntry],
    responses: list[HumanResponse],
    guidance: list[str],
    max_chars: int,
) -> tuple[str, int, list[list[int]]]:
    """Render everything, then drop the oldest entry (ties: earlier section, then earlier
    entry) while the text is longer than ``max_chars``."""
    groups: dict[str, list[int]] = {}
    for position, text in enumerate(rejected.feedback):
        groups.setdefault(text.strip(), []).append(position)
    entries: list[tuple[int, str, str]] = []  # (section, at, text)
    for e in escalations:
        entries.append(
            (
                0,
                e.at,
                prompts.render(
                    "feedback_escalation_entry",
                    cycle=e.cycle,
                    source_step=e.source_step,
                    source_cycle=e.source_cycle,
                    summary=e.summary,
                ),
            )
        )
    for text, members in groups.items():
        numbers = [rejected.numbers[p] for p in members]
        entries.append(
            (
                1,
                rejected.at[members[-1]],
                prompts.render(
                    "feedback_retry_entry",
                    attempts=", ".join(str(n) for n in numbers),
                    count=len(members),
                    feedback=text,
                    guard=rejected.guards[members[-1]] or "-",
                ),
            )
        )
    for f in findings:
        entries.append(
            (
                2,
                f.at,
                prompts.render(
                    "feedback_finding_entry",
                    stage=f.stage,
                    kind=f.kind,
                    status=f.status,
                    iteration=f.iteration,
                    failure_reason=f.failure_reason or "-",
                    response=f.response,
                ),
            )
        )
    for h in responses:
        entries.append(
            (
                3,
                h.at,
                prompts.render(
                    "feedback_human_entry",
                    escalation_id=h.escalation_id,
                    type=h.type,
                    response_type=h.response_type,
                    content=h.content or "-",
                    responder=h.responder or "-",
                    at=h.at,
                ),
            )
        )
    entries.extend((4, "~", line) for line in guidance)
    headers = [
        prompts.render("feedback_escalation_header", step=STEP),
        prompts.render("feedback_retry_header", step=STEP),
        prompts.render("feedback_findings_header"),
        prompts.render("feedback_human_header"),
        prompts.render("feedback_guidance_header"),
    ]
    kept = [True] * len(entries)

    def assemble(omitted: int) -> str:
        parts = [prompts.render("feedback_omitted", omitted=omitted, max_chars=max_chars)] if omitted else []
        for section, header in enumerate(headers):
            texts = [t for i, (s, _, t) in enumerate(entries) if kept[i] and s == section]
            if texts:
                parts.append("\n\n".join([header, *texts]))
        return "\n\n".join(parts)

    omitted = 0
    for i in sorted(range(len(entries)), key=lambda i: (entries[i][1], entries[i][0], i)):
        if len(assemble(omitted)) <= max_chars:
            break
        kept[i] = False
        omitted += 1
    text = assemble(omitted)
    if len(text) > max_chars:
        marker = prompts.render("feedback_truncated", max_chars=max_chars)
        text = text[: max(0, max_chars - len(marker))] + marker
    per_section: list[list[int]] = [[] for _ in headers]
    seen = [0] * len(headers)
    for i, (section, _, _) in enumerate(entries):
        if kept[i]:
            per_section[section].append(seen[section])
        seen[section] += 1
    # A retry entry is listed by its first attempt number.
    first_attempts = [rejected.numbers[members[0]] for members in groups.values()]
    per_section[1] = [first_attempts[i] for i in per_section[1]]
    return text, omitted, per_section


# Few distinct times, so entries of different sections often tie.
times = st.sampled_from([f"2026-11-21T10:0{m}:00.000Z" for m in range(4)])
words = st.text(alphabet="abc xyz\n", min_size=0, max_size=80)


@st.composite
def histories(draw: st.DrawFn) -> dict[str, object]:
    escalations = [
        CycleFeedback(cycle=i + 1, source_step=STEP, source_cycle=i + 1, summary=draw(words), at=draw(times))
        for i in range(draw(st.integers(0, 3)))
    ]
    # Few feedback texts with whitespace variants, so identical feedback collapses.
    texts = draw(st.lists(st.sampled_from(["a", " a", "a\n", "b b", "", "c" * 120]), max_size=25))
    rejected = Rejected(
        numbers=tuple(range(1, len(texts) + 1)),
        feedback=tuple(texts),
        guards=tuple(draw(st.sampled_from([None, "pytest"])) for _ in texts),
        at=tuple(sorted(draw(times) for _ in texts)),
    )
    findings = [
        FindingEntry(i + 1, f"stage_{i % 2}", "review", i + 1, "fail", draw(words), draw(words), draw(times))
        for i in range(draw(st.integers(0, 4)))
    ]
    responses = [
        HumanResponse(i + 1, "ask_human", "guidance", draw(words), None, draw(times))
        for i in range(draw(st.integers(0, 3)))
    ]
    guidance = [f"[low] line {i}" for i in range(draw(st.integers(0, 3)))]
    return {
        "escalations": escalations,
        "rejected": rejected,
        "findings": findings,
        "responses": responses,
        "guidance": guidance,
        "max_chars": draw(st.integers(0, 2500)),
    }


@pytest.mark.parametrize("book", ["shipped", "terse"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories())
def test_the_newest_first_fill_keeps_what_dropping_the_oldest_first_keeps(
    books: dict[str, PromptBook], store: sqlite3.Connection, book: str, history: dict[str, object]
) -> None:
    prompts = books[book]
    escalations = history["escalations"]
    rejected = history["rejected"]
    findings = history["findings"]
    responses = history["responses"]
    guidance = history["guidance"]
    max_chars = history["max_chars"]
    assert isinstance(escalations, list)
    assert isinstance(rejected, Rejected)
    assert isinstance(findings, list)
    assert isinstance(responses, list)
    assert isinstance(guidance, list)
    assert isinstance(max_chars, int)
    task_id = _record(store, rejected)
    budget = render_sections(
        prompts,
        step=STEP,
        escalations=escalations,
        retries=newest_retry_entries(store, task_id, STEP),
        retry_count=retry_entry_count(store, task_id, STEP),
        findings=findings,
        responses=responses,
        guidance=guidance,
        max_chars=max_chars,
    )
    text, omitted, kept = _reference(prompts, escalations, rejected, findings, responses, guidance, max_chars)
    assert (budget.text, budget.omitted, list(budget.kept)) == (text, omitted, kept)


def test_identical_feedback_collapses_into_one_entry_per_text(store: sqlite3.Connection) -> None:
    rejected = Rejected(
        numbers=(1, 2, 3, 4, 5),
        feedback=("E501 line too long", "F401 unused", " E501 line too long\n", "x", "F401 unused"),
        guards=("ruff", None, "ruff --fix", None, "pyflakes"),
        at=("t1", "t2", "t3", "t4", "t5"),
    )
    task_id = _record(store, rejected)
    assert retry_entry_count(store, task_id, STEP) == 3
    assert list(newest_retry_entries(store, task_id, STEP)) == [
        RetryEntry("F401 unused", "2, 5", 2, 2, "pyflakes", "t5"),
        RetryEntry("x", "4", 1, 4, None, "t4"),
        RetryEntry("E501 line too long", "1, 3", 2, 1, "ruff --fix", "t3"),
    ]


def test_the_store_strips_feedback_exactly_as_python_does(store: sqlite3.Connection) -> None:
    whitespace = "".join(chr(code) for code in range(0x110000) if chr(code).isspace())
    assert "".join(map(chr, WHITESPACE_CODES)) == whitespace
    texts = [f"{ws}fix{ws}it{ws}" for ws in whitespace] + [whitespace, "\u200b zero width"]
    for text in texts:
        task_id = _record(store, Rejected((1,), (text,), (None,), ("t1",)))
        [entry] = newest_retry_entries(store, task_id, STEP)
        assert entry.feedback == text.strip(), repr(text)
