"""Pure assembly of a step's feedback: collapsing retries, the failure summary of a
stagnation cycle, and rendering sections within a character budget.

All wording comes from the prompt book passed in; these functions only order, group and cut.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..models.feedback import Attempt, CycleFeedback, FindingEntry, HumanResponse, RetryEntry, ReviewFinding
from ..prompts import PromptBook
from .fingerprint import normalise_message

APPROACH_CHARS = 300


def failure_summary(prompts: PromptBook, step: str, cycle: int, rejected: list[Attempt]) -> str:
    """The summary a stagnation cycle leaves: error patterns, approaches tried, latest feedback."""
    patterns: dict[str, int] = {}
    for attempt in rejected:
        key = normalise_message(attempt.feedback)
        patterns[key] = patterns.get(key, 0) + 1
    pattern_lines = [
        prompts.render("summary_pattern", pattern=pattern, count=count)
        for pattern, count in sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    approach_lines = [
        prompts.render(
            "summary_approach",
            attempt_number=a.attempt_number,
            approach=(a.artifact or a.guard or "").strip().splitlines()[0][:APPROACH_CHARS]
            if (a.artifact or a.guard or "").strip()
            else "-",
        )
        for a in rejected
    ]
    return prompts.render(
        "failure_summary",
        step=step,
        cycle=cycle,
        count=len(rejected),
        patterns="\n".join(pattern_lines),
        approaches="\n".join(approach_lines),
        latest=rejected[-1].feedback if rejected else "",
    )


def finding_values(f: FindingEntry | ReviewFinding) -> dict[str, object]:
    """The placeholders of ``feedback_finding_entry`` for one finding (feedback, MCP prompt)."""
    return {
        "stage": f.stage,
        "kind": f.kind,
        "status": f.status,
        "iteration": f.iteration,
        "failure_reason": f.failure_reason or "-",
        "response": f.response,
    }


# An entry in the order entries are dropped: (time, section, key within the section, the
# entry). Oldest first; guidance has no time and goes last ("~" sorts after every ISO time).
Keyed = tuple[str, int, int, Any]


@dataclass(frozen=True, slots=True)
class Budgeted:
    """The rendered feedback, how many entries were left out, and which were kept: per
    section (escalations, retries, findings, responses, guidance) their keys, in the text's
    order (the index in the section given, but a retry entry's first attempt number)."""

    text: str
    omitted: int
    kept: tuple[list[int], ...]


def render_sections(
    prompts: PromptBook,
    *,
    step: str,
    escalations: Sequence[CycleFeedback],
    retries: Iterable[RetryEntry],
    retry_count: int,
    findings: Sequence[FindingEntry],
    responses: Sequence[HumanResponse],
    guidance: Sequence[str],
    max_chars: int,
) -> Budgeted:
    """The sections within ``max_chars``: the oldest entries (ties: earlier section first,
    then earlier entry) are left out until the text fits, and the text says how many.

    The budget is filled newest first and an entry is rendered only when it is reached, so a
    long history costs the entries that fit (plus one), not every entry it has. ``retries``
    (``retry_count`` of them) comes newest first (``store.feedback.newest_retry_entries``)
    and is read only as far as the fill goes."""
    render = prompts.render
    # Bound once: a long history renders dozens of entries per call.
    escalation_entry = prompts.filler(
        "feedback_escalation_entry", "cycle", "source_step", "source_cycle", "summary"
    )
    retry_entry = prompts.filler("feedback_retry_entry", "attempts", "count", "feedback", "guard")
    finding_entry = prompts.filler(
        "feedback_finding_entry", "stage", "kind", "status", "iteration", "failure_reason", "response"
    )
    human_entry = prompts.filler(
        "feedback_human_entry", "escalation_id", "type", "response_type", "content", "responder", "at"
    )

    def text_of(section: int, entry: Any) -> str:
        if section == 1:
            return retry_entry(
                attempts=entry.attempts,
                count=entry.attempt_count,
                feedback=entry.feedback,
                guard=entry.guard or "-",
            )
        if section == 2:
            return finding_entry(**finding_values(entry))
        if section == 0:
            return escalation_entry(
                cycle=entry.cycle,
                source_step=entry.source_step,
                source_cycle=entry.source_cycle,
                summary=entry.summary,
            )
        if section == 3:
            return human_entry(
                escalation_id=entry.escalation_id,
                type=entry.type,
                response_type=entry.response_type,
                content=entry.content or "-",
                responder=entry.responder or "-",
                at=entry.at,
            )
        return str(entry)

    def newest_first(section: int, entries: Sequence[Any], times: Iterable[str]) -> list[Keyed]:
        return sorted(
            ((at, section, i, e) for i, (at, e) in enumerate(zip(times, entries, strict=True))), reverse=True
        )

    total = len(escalations) + retry_count + len(findings) + len(responses) + len(guidance)
    # (time, section, key) is unique, so the tuples compare without reaching the entries.
    newest: Iterator[Keyed] = heapq.merge(
        newest_first(0, escalations, (e.at for e in escalations)),
        ((r.at, 1, r.first_attempt, r) for r in retries),
        newest_first(2, findings, (f.at for f in findings)),
        newest_first(3, responses, (h.at for h in responses)),
        newest_first(4, guidance, ("~" for _ in guidance)),
        reverse=True,
    )
    headers = [
        render("feedback_escalation_header", step=step) if escalations else "",
        render("feedback_retry_header", step=step) if retry_count else "",
        render("feedback_findings_header") if findings else "",
        render("feedback_human_header") if responses else "",
        render("feedback_guidance_header") if guidance else "",
    ]

    def notice(omitted: int) -> str:
        return render("feedback_omitted", omitted=omitted, max_chars=max_chars)

    # The text is [notice] + one part per non-empty section (its header, then its entries),
    # parts and entries separated by "\n\n"; its length is kept as running totals.
    separator = 2
    kept: list[tuple[int, int, str]] = []  # (section, key, text), newest first
    in_section = [0] * len(headers)
    body = 0  # sum of (entry + separator) over the kept entries
    header_chars = 0
    parts = 0
    longest = len(notice(total)) if total else 0
    shortest = len(notice(1)) if total else 0
    overflowed: Keyed | None = None
    for position, keyed in zip(range(total - 1, -1, -1), newest, strict=False):
        _, section, key, entry = keyed
        text = text_of(section, entry)
        new_section = in_section[section] == 0
        size = body + len(text) + separator + header_chars + parts * separator
        if new_section:
            size += len(headers[section]) + separator
        if not position:
            size -= separator  # nothing left out, no notice: n parts have n - 1 separators
        elif size + longest > max_chars:
            # Older entries would be left out, so the notice is a part too. Its length never
            # shrinks as the count grows (so for every integer format below a million), so
            # it is rendered only where these bounds cannot decide.
            if size + shortest > max_chars:
                overflowed = keyed
                break
            size += len(notice(position))
        if size > max_chars:
            overflowed = keyed
            break
        kept.append((section, key, text))
        body += len(text) + separator
        if new_section:
            header_chars += len(headers[section])
            parts += 1
        in_section[section] += 1

    omitted = total - len(kept)
    if overflowed is not None and omitted > 1:
        older = _all_if_they_fit(overflowed, omitted - 1, newest, kept, text_of, headers, notice, max_chars)
        if older is not None:
            kept.extend(older)
            omitted = 0

    by_section: tuple[list[tuple[int, str]], ...] = tuple([] for _ in headers)
    for section, key, text in kept:
        by_section[section].append((key, text))
    for entries in by_section:
        entries.sort()
    section_parts = [
        headers[section] + "\n\n" + "\n\n".join(text for _, text in entries)
        for section, entries in enumerate(by_section)
        if entries
    ]
    text = "\n\n".join([notice(omitted), *section_parts] if omitted else section_parts)
    if len(text) > max_chars:
        # Even what is left is too long (the notice alone): cut it, and say so.
        marker = render("feedback_truncated", max_chars=max_chars)
        text = text[: max(0, max_chars - len(marker))] + marker
    return Budgeted(text, omitted, tuple([key for key, _ in entries] for entries in by_section))


def _all_if_they_fit(
    overflowed: Keyed,
    older_count: int,
    older: Iterator[Keyed],
    kept: list[tuple[int, int, str]],
    text_of: Callable[[int, Any], str],
    headers: list[str],
    notice: Callable[[int], str],
    max_chars: int,
) -> list[tuple[int, int, str]] | None:
    """The entry that overflowed and every older one, if the whole text fits without the
    notice after all: the one case the newest-first fill cannot see from the entry that
    overflowed, possible only when the entries older than it are together shorter than
    the notice. None otherwise (reading only until they outweigh it)."""
    separator = 2
    _, section, key, entry = overflowed
    rest = [(section, key, text_of(section, entry))]
    allowance = len(notice(older_count)) + separator
    weight = 0
    for _, section, key, entry in older:
        text = text_of(section, entry)
        rest.append((section, key, text))
        weight += len(text) + separator
        if weight >= allowance:
            return None  # they outweigh the notice: the whole is longer than what overflowed
    everything = kept + rest
    used = {section for section, _, _ in everything}
    size = sum(len(text) + separator for _, _, text in everything)
    size += sum(len(headers[s]) for s in used) + separator * (len(used) - 1)
    return rest if size <= max_chars else None
