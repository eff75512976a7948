"""Pure assembly of a step's feedback: collapsing retries, the failure summary of a
stagnation cycle, and rendering sections within a character budget (SPEC 5).

All wording comes from the prompt book passed in; these functions only order, group and cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models.feedback import Attempt, CycleFeedback, HumanResponse, RetryEntry, ReviewFinding
from ..prompts import PromptBook
from .fingerprint import normalise_message

APPROACH_CHARS = 300


def collapse_retries(rejected: list[Attempt]) -> list[RetryEntry]:
    """Rejected attempts, oldest first, identical feedback collapsed into one entry."""
    groups: dict[str, list[Attempt]] = {}
    for attempt in rejected:
        groups.setdefault(attempt.feedback.strip(), []).append(attempt)
    entries = [
        RetryEntry(
            attempt_numbers=[a.attempt_number for a in group],
            count=len(group),
            feedback=text,
            guard=group[-1].guard,
            cycles=sorted({a.cycle for a in group}),
            first_at=group[0].at,
            last_at=group[-1].at,
        )
        for text, group in groups.items()
    ]
    return sorted(entries, key=lambda e: (e.attempt_numbers[0], e.feedback))


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


@dataclass(frozen=True)
class Entry:
    """One rendered entry of a section, with the time that decides what is dropped first."""

    section: int
    at: str
    text: str


def render_sections(
    prompts: PromptBook,
    *,
    step: str,
    escalations: list[CycleFeedback],
    retries: list[RetryEntry],
    findings: list[ReviewFinding],
    responses: list[HumanResponse],
    guidance: list[str],
    max_chars: int,
) -> tuple[str, int, list[bool]]:
    """The rendered feedback, how many entries were omitted to fit ``max_chars``, and which
    entries were kept (in the order escalations, retries, findings, responses, guidance), so
    the structured sections can be cut to the same budget."""
    entries: list[Entry] = []
    for e in escalations:
        text = prompts.render(
            "feedback_escalation_entry",
            cycle=e.cycle,
            source_step=e.source_step,
            source_cycle=e.source_cycle,
            summary=e.summary,
        )
        entries.append(Entry(0, e.at, text))
    for r in retries:
        attempts = ", ".join(str(n) for n in r.attempt_numbers)
        text = prompts.render(
            "feedback_retry_entry",
            attempts=attempts,
            count=r.count,
            feedback=r.feedback,
            guard=r.guard or "-",
        )
        entries.append(Entry(1, r.last_at, text))
    for f in findings:
        text = prompts.render(
            "feedback_finding_entry",
            stage=f.stage,
            kind=f.kind,
            status=f.status,
            iteration=f.iteration,
            failure_reason=f.failure_reason or "-",
            response=f.response,
        )
        entries.append(Entry(2, f.at, text))
    for h in responses:
        text = prompts.render(
            "feedback_human_entry",
            escalation_id=h.escalation_id,
            type=h.type,
            response_type=h.response_type,
            content=h.content or "-",
            responder=h.responder or "-",
            at=h.at,
        )
        entries.append(Entry(3, h.at, text))
    # Guidance is already ranked and short; it is the newest, most specific advice.
    entries.extend(Entry(4, "~", line) for line in guidance)

    headers = [
        prompts.render("feedback_escalation_header", step=step),
        prompts.render("feedback_retry_header", step=step),
        prompts.render("feedback_findings_header"),
        prompts.render("feedback_human_header"),
        prompts.render("feedback_guidance_header"),
    ]
    # Drop the oldest entries (ties: earlier section first) until the text fits. Lengths are
    # kept as running totals so that a long history costs one pass, not one render per drop.
    separator = 2  # "\n\n" between parts
    per_section = [0] * len(headers)
    for entry in entries:
        per_section[entry.section] += 1
    body = sum(len(entry.text) + separator for entry in entries)
    order = sorted(range(len(entries)), key=lambda i: (entries[i].at, entries[i].section, i))
    kept = [True] * len(entries)
    omitted = 0

    def size() -> int:
        """The exact length ``text`` below would have."""
        lengths = [len(h) for s_, h in enumerate(headers) if per_section[s_]]
        if omitted:
            lengths.append(len(prompts.render("feedback_omitted", omitted=omitted, max_chars=max_chars)))
        return body + sum(lengths) + separator * max(0, len(lengths) - 1)

    for index in order:
        if size() <= max_chars:
            break
        kept[index] = False
        per_section[entries[index].section] -= 1
        body -= len(entries[index].text) + separator
        omitted += 1

    parts: list[str] = []
    if omitted:
        parts.append(prompts.render("feedback_omitted", omitted=omitted, max_chars=max_chars))
    for section, header in enumerate(headers):
        texts = [e.text for i, e in enumerate(entries) if kept[i] and e.section == section]
        if texts:
            parts.append(header + "\n\n" + "\n\n".join(texts))
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        # Even what is left is too long (one huge entry): cut it, and say so.
        marker = prompts.render("feedback_truncated", max_chars=max_chars)
        text = text[: max(0, max_chars - len(marker))] + marker
    return text, omitted, kept
