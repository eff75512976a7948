"""Operator commands that watch and measure: ``escalations watch``, ``stats``, ``db backup``, ``db check``.

Same services and store as the tools. Tables on a terminal, ``--json`` for scripts (one JSON
object per line for ``watch``). Exit codes: 0 done; 1 an error (stderr says which), or
``watch --once`` saw nothing before ``--timeout``; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Awaitable

import anyio

from ..models.operator import EscalationChange, WatchLine
from ..models.reports import Delivery, StatsReport
from ..rules.wording.words import (
    absent,
    counted,
    duration,
    kind_words,
    name_words,
    readable_time,
    replay_words,
)
from ..services import reports
from ..services.background import CLI_AFTER_WORK_SECONDS, deliver_pending, operator_side
from ..services.changes import describe
from ..services.runtime import Runtime
from .log_lines import report_error
from .readable import INDENT, cut, terminal_width, wrap


def out(text: str = "") -> None:
    """One line on stdout, flushed (``watch`` output goes to pipes as it happens)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# A last column narrower than this says too little: the table is stacked instead.
LAST_COLUMN_MIN = 12


def say(text: str) -> None:
    """A message of one or more lines, wrapped to the terminal; continuation lines indented."""
    lead = text[: len(text) - len(text.lstrip())]
    for line in wrap(text.lstrip(), terminal_width(), lead, lead + INDENT):
        out(line)


def table(
    headers: list[str],
    rows: list[list[str]],
    *,
    right: frozenset[int] = frozenset(),
    width: int | None = None,
) -> list[str]:
    """Aligned columns; the last column is left ragged, and cut to fit ``width``.

    When even the other columns do not fit, each row becomes a block instead: its first
    cell whole on a line (ids are never cut), the other cells as ``header value`` pairs
    wrapped under it.
    """
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    before_last = sum(widths[:-1]) + 2 * (len(widths) - 1)
    if width is not None and len(headers) > 1 and before_last + LAST_COLUMN_MIN > width:
        return _stacked(headers, rows, width)
    lines = []
    for row in [headers, *rows]:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        cells[-1] = cells[-1].rstrip() if len(cells) > 1 and cells[-1].strip() else cells[-1]
        line = "  ".join(cells).rstrip()
        lines.append(cut(line, width) if width is not None and len(line) > width else line)
    return lines


def _stacked(headers: list[str], rows: list[list[str]], width: int) -> list[str]:
    lines = []
    for row in rows:
        pairs = ", ".join(f"{h.lower()} {cell}" for h, cell in zip(headers[1:], row[1:], strict=True))
        lines += [row[0], *wrap(pairs, width, INDENT)]
    return lines


async def with_delivery(rt: Runtime, work: Awaitable[int]) -> int:
    """Run a command next to one delivery pass, so announcements left behind go out now.

    Once the command's own work is done, the pass has ``CLI_AFTER_WORK_SECONDS`` more: the
    task group waits for it, and a hanging notifier once added its whole pass (5 s) to
    every command. An attempt cut short counts as failed, so the next commands wait for its
    retry time instead of trying it again at once.
    """
    code = 1
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(deliver_pending, rt)
        try:
            code = await work
        except Exception as exc:  # noqa: BLE001 (re-raised below, outside the task group, unchanged)
            error = exc
            tg.cancel_scope.cancel()
        done = anyio.current_time() + CLI_AFTER_WORK_SECONDS
        tg.cancel_scope.deadline = min(tg.cancel_scope.deadline, done)
    if error is not None:
        raise error
    return code


async def run(rt: Runtime, args: argparse.Namespace) -> int:
    """Dispatch ``watch``, ``stats``, ``db backup`` and ``db check``."""
    if args.command == "escalations":
        return await watch(rt, args)
    if args.command == "stats":
        return await with_delivery(rt, _stats(rt, args))
    if args.action == "check":
        return await _check(rt, args)
    return await with_delivery(rt, _backup(rt, args))


async def watch(rt: Runtime, args: argparse.Namespace) -> int:
    """Print changes as they are committed, by any process, until interrupted."""
    if args.timeout is not None and args.timeout <= 0:
        report_error("--timeout must be a positive number of seconds")
        return 1
    done = anyio.Event()
    printed = 0

    async def show(batch: list[EscalationChange]) -> None:
        nonlocal printed
        for change in batch:
            if done.is_set() or (args.task and change.task_id != args.task):
                continue
            line = await describe(rt, change)
            for text in [line.model_dump_json()] if args.json else _watch_lines(line, terminal_width()):
                out(text)
            printed += 1
            if args.once:
                done.set()

    async with operator_side(rt, show):
        # The feed's starting point is fixed before this line: anything committed after it
        # is printed. Scripts (and tests) may wait for it on stderr.
        sys.stderr.write(f"watching {rt.db.path} for escalation changes (Ctrl-C to stop)\n")
        sys.stderr.flush()
        with anyio.move_on_after(args.timeout if args.timeout is not None else math.inf):
            await done.wait()
    if args.once and not printed:
        report_error(f"no escalation changed within {args.timeout:g} s")
        return 1
    return 0


def _watch_lines(line: WatchLine, width: int) -> list[str]:
    """A change: what happened to which escalation (wrapped between words), then its headline."""
    s = line.escalation
    row = f"{line.at}  {line.event}  #{s.escalation_id}  {s.status}  {s.type}  {s.priority}  {s.task_id}"
    return [
        *wrap(row, width, "", INDENT, whole_words=True),
        f"{INDENT}{cut(s.headline, width - len(INDENT))}",
    ]


async def _stats(rt: Runtime, args: argparse.Namespace) -> int:
    report = await reports.stats(rt)
    if args.json:
        out(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0
    for line in stats_lines(report, terminal_width()):
        out(line)
    return 0


def _judged_lines(report: StatsReport, width: int) -> list[str]:
    """Per trigger type: the operators' verdicts beside the replay's precision on each corpus."""
    if not report.judged_by_type:
        return []
    lines = [
        "",
        *wrap(
            "Per kind: judged useful here, beside the replay of real runs (of the runs the trigger "
            "paused, the share that were going to fail)",
            width,
        ),
    ]
    for j in report.judged_by_type:
        share = "no verdict yet" if j.useful_share is None else f"{j.useful_share:.0%} judged useful"
        lines += wrap(
            f"{kind_words(j.type)}: {j.useful} useful, {j.false_alarm} false alarm ({share})", width, INDENT
        )
        replayed = [replay_words(f.precision, f.paused, f.corpus, f.base_rate) for f in j.replay]
        lines += wrap(f"replay: {'; '.join(replayed) or 'not measured'}", width, INDENT * 2, INDENT * 3)
    return lines


def _verdict_lines(report: StatsReport, width: int) -> list[str]:
    """Operators' verdicts per type and project, and the thresholds false alarms say to raise."""
    if not report.verdicts:
        return [
            *_judged_lines(report, width),
            "",
            *wrap("Verdicts: none yet (escalations respond ID ... --verdict useful|false-alarm)", width),
        ]
    rows = [
        [
            kind_words(v.type),
            v.project,
            str(v.useful),
            str(v.false_alarm),
            f"{v.useful / (v.useful + v.false_alarm):.0%}",
        ]
        for v in report.verdicts
    ]
    lines = [
        *_judged_lines(report, width),
        "",
        "Verdicts per project",
        *table(
            ["KIND", "PROJECT", "USEFUL", "FALSE ALARM", "USEFUL SHARE"],
            rows,
            right=frozenset({2, 3, 4}),
            width=width,
        ),
    ]
    for advice in report.raise_thresholds:
        lines += wrap(
            f"{kind_words(advice.type)} in {advice.project}: "
            f"{counted(advice.false_alarm, 'false alarm', 'false alarms')} against "
            f"{advice.useful} useful; raise {advice.threshold} there",
            width,
        )
    return lines


def _per_day_lines(report: StatsReport, width: int) -> list[str]:
    """The days of the last ``PER_DAY_DAYS`` with escalations: how many, of which kinds, how
    many a person answered and how many wait."""
    days = [day for day in report.per_day if day.total]
    if not days:
        return ["", *wrap(f"Per day: none raised in the last {len(report.per_day)} days", width)]
    rows = [
        [
            day.day,
            str(day.total),
            str(day.answered),
            str(day.waiting),
            ", ".join(f"{count} {kind_words(kind)}" for kind, count in day.by_type.items()),
        ]
        for day in reversed(days)
    ]
    title = f"Per day (the last {len(report.per_day)} days, UTC, newest first; days without any left out)"
    return [
        "",
        *wrap(title, width),
        *table(
            ["DAY", "RAISED", "ANSWERED", "WAITING", "KINDS"], rows, right=frozenset({1, 2, 3}), width=width
        ),
    ]


def stats_lines(report: StatsReport, width: int) -> list[str]:
    """The stats report as a terminal of ``width`` columns reads it."""
    lines = [f"Escalations: {report.total}   (as of {readable_time(report.generated_at)})"]
    if report.total:
        statuses = list(report.by_status)
        rows = [
            [
                kind_words(type_),
                *(str(report.by_type_and_status[type_].get(s, 0)) for s in statuses),
                str(total),
            ]
            for type_, total in report.by_type.items()
        ]
        rows.append(["all", *(str(report.by_status[s]) for s in statuses), str(report.total)])
        headers = ["KIND", *(name_words(s).upper() for s in statuses), "ALL"]
        lines += ["", *table(headers, rows, right=frozenset(range(1, len(statuses) + 2)), width=width)]
        lines += _per_day_lines(report, width)
    r = report.resolution
    took = (
        f"median {duration(r.median_seconds)}, 95th percentile {duration(r.p95_seconds)}"
        if r.median_seconds is not None
        else duration(None)
    )
    lines += ["", *wrap(f"Answered by a human: {r.answered}   time to resolution: {took}", width)]
    if r.within_hour_share is None:
        lines += wrap("Resolved within 1 hour (target 95%): no escalation with a known outcome yet", width)
    else:
        verdict = "met" if r.sc010_met else "not met"
        lines += wrap(
            f"Resolved within 1 hour (target 95%): {r.within_hour} of {r.counted} "
            f"({r.within_hour_share:.1%}): {verdict}",
            width,
        )
    lines += _verdict_lines(report, width)
    if report.notifications:
        rows = [
            [
                n.notifier,
                str(n.delivered),
                str(n.waiting),
                str(n.failed_attempts),
                n.last_error or absent("error"),
            ]
            for n in report.notifications
        ]
        lines += [
            "",
            "Notifications",
            *table(
                ["NOTIFIER", "DELIVERED", "WAITING", "FAILED ATTEMPTS", "LAST ERROR"],
                rows,
                right=frozenset({1, 2, 3}),
                width=width,
            ),
        ]
    return lines


def delivery_lines(deliveries: list[Delivery], width: int, status: str, newest: int | None) -> list[str]:
    """How an escalation's notifications went, for ``escalations show`` (nothing if none).

    ``status``: the escalation's; ``newest``: the id of its newest announcement. Only the newest
    announcement of a pending escalation is retried (``store/outbox.py``): any other
    undelivered one says that no retry is planned, and why, not a next time that never comes."""
    lines = []
    for d in deliveries:
        if d.delivered_at:
            state = f"delivered {readable_time(d.delivered_at)} (attempt {d.attempts})"
        else:
            tried = counted(d.attempts, "attempt", "attempts")
            state = f"not delivered after {tried}; {_retry(d, status, newest)}"
        error = f"; last error: {d.last_error}" if d.last_error else ""
        lines += wrap(f"{d.event}  {d.notifier}  {state}{error}", width, INDENT, INDENT * 2)
    return ["", "Notified", *lines] if lines else []


def _retry(delivery: Delivery, status: str, newest: int | None) -> str:
    """What becomes of an undelivered announcement: its next try, or why there is none."""
    if status != "pending":
        return f"no retry planned: the escalation is {name_words(status)}"
    if newest is not None and delivery.outbox_id != newest:
        return "no retry planned: a later announcement replaced it"
    if delivery.next_attempt_at is None:
        return "next try at the next delivery pass"
    return f"next try {readable_time(delivery.next_attempt_at)}"


async def _backup(rt: Runtime, args: argparse.Namespace) -> int:
    report = await reports.backup(rt, args.path, overwrite=args.force)
    if args.json:
        out(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0
    say(
        f"backed up {report.source} to {report.destination}: {report.bytes} bytes, schema version "
        f"{report.schema_version}, {report.escalations} escalations, {report.tasks} tasks "
        f"(integrity {report.integrity})"
    )
    return 0


async def _check(rt: Runtime, args: argparse.Namespace) -> int:
    report = await reports.check_store(rt, repair=args.repair)
    if args.json:
        out(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0 if report.ok else 1
    say(f"{report.path}: {report.failure_records} failure records")
    say(f"  file (PRAGMA integrity_check): {'; '.join(report.integrity)}")
    index = {
        "ok": "ok",
        "damaged": f"DAMAGED ({report.search_index_problem}); run again with --repair to rebuild it",
        "rebuilt": f"was damaged ({report.search_index_problem}); rebuilt from the failure records",
    }[report.search_index]
    say(f"  search index (FTS5 integrity-check): {index}")
    if report.integrity != ["ok"]:
        say("  the file itself is damaged: restore a backup (db backup makes one); --repair cannot fix it")
    return 0 if report.ok else 1
