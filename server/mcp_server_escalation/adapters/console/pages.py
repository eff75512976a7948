"""The console's HTML: templates from ``prompts/console.toml`` filled with escaped values.

Everything an agent wrote (errors, questions, paths, options) reaches a page only through
``html.escape``: a value is escaped unless it is a ``Safe`` fragment this module built from
escaped values. No template engine: the project's templates are ``str.format`` strings
checked at load (prompts.py), and jinja2 is not a dependency of anything we install. Small
structural tags (tables, lists) are built here; every word comes from the templates.
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any
from urllib.parse import quote

from ...models.escalations import Escalation, EscalationSummary, ToldAtFiring, Trigger
from ...models.results import TaskView
from ...prompts import PromptBook
from ...rules.announce import HEADLINE_CHARS
from ...rules.salient import headline
from ...rules.words import field_words, kind_words, name_words, trigger_words, yes_no

# How deep nested evidence is drawn as tables and lists before the rest is shown as JSON.
NESTING_SHOWN = 3
# The pass-rate chart: one bar per test run, the full height a 100 % pass rate.
CHART_BAR_WIDTH = 14
CHART_HEIGHT = 40
# The answer-time chart: one labelled row per bucket, the longest bar the full width.
ANSWER_LABELS = (
    "console_answer_within_5m",
    "console_answer_within_15m",
    "console_answer_within_1h",
    "console_answer_within_4h",
    "console_answer_longer",
)
ROW_HEIGHT = 18
LABEL_WIDTH = 70
BAR_WIDTH = 220
# An empty value (no paths, no detail) as the page says it.
NOTHING = "(none)"


class Safe(str):
    """HTML this module built from escaped values: placed as it is."""

    __slots__ = ()


def escape(value: object) -> Safe:
    """The value as text a browser shows and never runs."""
    return value if isinstance(value, Safe) else Safe(html.escape(str(value), quote=True))


def fill(book: PromptBook, template: str, /, **values: object) -> Safe:
    """The template with every value escaped (``Safe`` fragments placed as they are)."""
    return Safe(book.render(template, **{key: escape(value) for key, value in values.items()}))


def page(book: PromptBook, title: str, body: Safe, csrf: str | None) -> str:
    """A whole page: the layout around ``body``, with a log-out button for a session."""
    nav = fill(book, "console_nav", csrf=csrf) if csrf else Safe("")
    return fill(book, "console_layout", title=title, nav=nav, body=body)


def age(created_at: str, now: str) -> str:
    """How long ago, in the largest whole unit: 45s, 12m, 3h, 2d."""
    seconds = int((datetime.fromisoformat(now) - datetime.fromisoformat(created_at)).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def task_link(task_id: str) -> str:
    """The task id as one path segment of ``/tasks/...`` (escaped again when placed)."""
    return quote(task_id, safe="")


def salient_line(e: Escalation) -> str:
    """The salient line: the first line of the first trigger's summary."""
    return headline(e.triggers[0].summary if e.triggers else e.reason or "", HEADLINE_CHARS)


def facts(value: Any, depth: int = 0) -> Safe:
    """Evidence for a human: a list of records as a table, a record as a definition list,
    in words (field names, flags and the store's names; never JSON or a Python repr)."""
    if isinstance(value, Safe):
        return value
    if value is None or value in ({}, []) or (depth >= NESTING_SHOWN and isinstance(value, dict | list)):
        return escape(_said(value))
    if isinstance(value, dict):
        return _definitions(value, depth)
    if isinstance(value, list):
        return _items(value, depth)
    return escape(_said(value))


def _said(value: Any) -> str:
    """Nested facts on one line: ``field value, field value``; items separated by commas."""
    if isinstance(value, dict):
        return ", ".join(f"{field_words(str(k))} {_said(v)}" for k, v in value.items()) or NOTHING
    if isinstance(value, list):
        return ", ".join(_said(v) for v in value) or NOTHING
    if isinstance(value, bool):
        return yes_no(value)
    return NOTHING if value is None else name_words(value) if isinstance(value, str) else str(value)


def _definitions(record: dict[str, Any], depth: int) -> Safe:
    """A record as a definition list (nothing for an empty one)."""
    if not record:
        return Safe("")
    items = "".join(
        f"<dt>{escape(field_words(str(k)))}</dt><dd>{facts(record[k], depth + 1)}</dd>" for k in record
    )
    return Safe(f"<dl>{items}</dl>")


def _items(values: list[Any], depth: int) -> Safe:
    """A list of records as a table, anything else as a bulleted list."""
    if values and all(isinstance(item, dict) for item in values):
        return _table(values, depth)
    items = "".join(f"<li>{facts(item, depth + 1)}</li>" for item in values)
    return Safe(f"<ul>{items}</ul>")


def _located(record: dict[str, Any]) -> dict[str, Any]:
    """An occurrence's ``file`` and ``line`` as the one ``file:line`` a reader looks for."""
    if "file" not in record or "line" not in record:
        return record
    place = f"{record['file']}:{record['line']}" if record["line"] is not None else record["file"]
    merged: dict[str, Any] = {}
    for key, value in record.items():
        if key == "file":
            merged["file:line"] = place
        elif key != "line":
            merged[key] = value
    return merged


def pass_rate_chart(records: list[dict[str, Any]]) -> Safe:
    """The test runs' pass rates as bars (inline SVG, styled by the stylesheet), oldest first."""
    rates = [r["pass_rate"] for r in records if isinstance(r.get("pass_rate"), int | float)]
    if not rates:
        return Safe("")
    width, height = CHART_BAR_WIDTH, CHART_HEIGHT
    bars = "".join(
        f'<rect x="{i * width + 2}" y="{height - max(1, round(rate * height))}" width="{width - 4}" '
        f'height="{max(1, round(rate * height))}"><title>{escape(f"{rate:.0%}")}</title></rect>'
        for i, rate in enumerate(rates)
    )
    box = len(rates) * width
    return Safe(
        f'<svg class="chart" viewBox="0 0 {box} {height}" width="{box * 2}" height="{height * 2}" '
        f'role="img">{bars}</svg>'
    )


def answer_time_chart(book: PromptBook, buckets: list[int]) -> Safe:
    """Human answers per bucket of answer time as labelled bars (inline SVG, escaped labels)."""
    tallest = max(buckets, default=0) or 1
    rows = []
    for i, (template, count) in enumerate(zip(ANSWER_LABELS, buckets, strict=True)):
        label = escape(book.render(template))
        top = i * ROW_HEIGHT
        length = round(count / tallest * BAR_WIDTH)
        rows.append(
            f'<text x="0" y="{top + 13}">{label}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{top + 3}" width="{length}" height="{ROW_HEIGHT - 6}">'
            f"<title>{label}: {count}</title></rect>"
            f'<text x="{LABEL_WIDTH + length + 4}" y="{top + 13}">{count}</text>'
        )
    width, height = LABEL_WIDTH + BAR_WIDTH + 40, len(ANSWER_LABELS) * ROW_HEIGHT
    chart = Safe(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width * 2}" height="{height * 2}" '
        f'role="img">{"".join(rows)}</svg>'
    )
    return fill(book, "console_answer_times", answered=sum(buckets), chart=chart)


def _table(records: list[dict[str, Any]], depth: int) -> Safe:
    chart = pass_rate_chart(sorted(records, key=lambda r: str(r.get("at", ""))))
    records = [_located(r) for r in records]
    columns: list[str] = []
    for record in records:
        columns.extend(key for key in record if key not in columns)
    head = "".join(f"<th>{escape(field_words(c))}</th>" for c in columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{facts(r.get(c), depth + 1)}</td>" for c in columns) + "</tr>" for r in records
    )
    return Safe(f"{chart}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _trigger(book: PromptBook, trigger: Trigger) -> Safe:
    return fill(
        book,
        "console_trigger",
        type=kind_words(trigger.type),
        summary=trigger.summary,
        criteria=facts(trigger.criteria),
        observed=facts(trigger.observed),
        at=trigger.at,
        fired_count=trigger.fired_count,
    )


def _question(book: PromptBook, e: Escalation) -> Safe:
    if not (e.question or e.reason):
        return Safe("")
    options = (
        Safe("<ol>" + "".join(f"<li>{escape(o)}</li>" for o in e.options) + "</ol>") if e.options else ""
    )
    return fill(book, "console_question", question=e.question or e.reason, options=options)


def answer_part(book: PromptBook, e: Escalation, csrf: str) -> Safe:
    """The answer form of a pending escalation, else the answer and whether the agent has it."""
    if e.response is not None:
        not_yet = fill(book, "console_not_yet")
        return fill(
            book,
            "console_answered",
            response_type=e.response.response_type,
            responder=e.response.responder or "",
            responded_at=e.response.responded_at,
            content=e.response.content,
            delivered_at=e.delivered_at or not_yet,
            acknowledged_at=e.acknowledged_at or not_yet,
        )
    if e.status != "pending":
        return fill(book, "console_closed", status=e.status)
    choices = Safe(
        "".join(
            fill(book, "console_choice", value=kind, meaning=fill(book, f"console_meaning_{kind}"))
            for kind in e.response_options
            if kind != "withdraw"
        )
    )
    options = Safe("")
    if e.options:
        picks = "".join(fill(book, "console_option", index=i, option=o) for i, o in enumerate(e.options, 1))
        options = fill(book, "console_options", choices=Safe(picks))
    approve = fill(book, "console_approve_fields") if "approve" in e.response_options else Safe("")
    return fill(
        book,
        "console_answer_form",
        escalation_id=e.escalation_id,
        csrf=csrf,
        revision=e.revision,
        options=options,
        choices=choices,
        approve=approve,
    )


def told_at_firing(book: PromptBook, told: ToldAtFiring | None) -> Safe:
    """What the agent was told when the escalation fired, or that it was not kept then."""
    if told is None:
        return fill(book, "console_told_not_recorded")
    return fill(
        book, "console_told_at_firing", directive=told.directive, message=told.message, told_at=told.told_at
    )


def escalation_body(
    book: PromptBook, e: Escalation, csrf: str, told: str, told_then: ToldAtFiring | None
) -> Safe:
    """The escalation page: what fired, the evidence, the question, the answer, ``told_then``:
    what the agent was told when it fired, and ``told``: what the agent reads about it now."""
    task = e.context.get("task", {})
    evidence = e.context.get("evidence", {})
    actions = e.context.get("recent_actions", [])
    return fill(
        book,
        "console_escalation",
        escalation_id=e.escalation_id,
        type=kind_words(e.type),
        headline=salient_line(e),
        status=e.status,
        priority=e.priority,
        task_id=e.task_id,
        task_link=task_link(e.task_id),
        title=task.get("title", ""),
        project=task.get("project") or fill(book, "console_nothing"),
        agent_id=e.agent_id,
        scope=", ".join(task.get("scope") or []) or fill(book, "console_any_path"),
        created_at=e.created_at,
        revision=e.revision,
        question=_question(book, e),
        triggers=Safe("".join(_trigger(book, t) for t in e.triggers)),
        evidence=Safe("".join(_evidence(book, k, evidence[k]) for k in sorted(evidence))),
        actions=facts(actions) if actions else fill(book, "console_no_actions"),
        answer=answer_part(book, e, csrf),
        told=told,
        told_then=told_at_firing(book, told_then),
    )


def _evidence(book: PromptBook, heading: str, value: Any) -> Safe:
    """One trigger's evidence; a failure's links to its whole error, from each occurrence too."""
    failure_id = value.get("failure_id") if isinstance(value, dict) else None
    if not isinstance(failure_id, str):
        return fill(book, "console_evidence", heading=trigger_words(heading), body=facts(value))
    link = fill(book, "console_whole_output_link", failure_id=failure_id)
    linked = {key: _linked_run(item, link) for key, item in value.items()}
    body = Safe(fill(book, "console_whole_error_link", failure_id=failure_id) + facts(linked))
    return fill(book, "console_evidence", heading=trigger_words(heading), body=body)


def _linked_run(value: Any, link: Safe) -> Any:
    """A run of occurrences with a link to the whole output on each."""
    if not (isinstance(value, dict) and "at_firing" in value):
        return value
    return {
        key: [{**item, "whole output": link} for item in items] if key in ("at_firing", "latest") else items
        for key, items in value.items()
    }


def answered_rows(book: PromptBook, summaries: list[EscalationSummary]) -> Safe:
    """The rows of the answered list."""
    return Safe(
        "".join(
            fill(
                book,
                "console_answered_row",
                escalation_id=s.escalation_id,
                type=kind_words(s.type),
                headline=s.headline,
                task_link=task_link(s.task_id),
                task_id=s.task_id,
                agent_id=s.agent_id,
                status=s.status,
                created_at=s.created_at,
            )
            for s in summaries
        )
    )


def task_body(book: PromptBook, view: TaskView) -> Safe:
    """The task page: its state, what the agent is told now, its escalations and counters."""
    task = view.task
    links = Safe(
        " ".join(f'<a href="/escalations/{int(i)}">#{int(i)}</a>' for i in reversed(view.escalation_ids))
    )
    details = view.model_dump(
        mode="json",
        include={"counters", "thresholds", "modified_files", "modified_count", "test_history"},
    )
    return fill(
        book,
        "console_task",
        task_id=task.task_id,
        title=task.title,
        status=task.status,
        project=task.project,
        agent_id=task.agent_id,
        approach=task.approach or fill(book, "console_nothing"),
        directive=view.directive,
        message=view.message,
        escalations=links or fill(book, "console_nothing"),
        details=facts(details),
    )
