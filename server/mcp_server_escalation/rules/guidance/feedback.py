"""Pure assembly of a step's feedback: collapsing retries, the failure summary of a
stagnation cycle, and rendering sections within a character budget.

All wording comes from the prompt book passed in; these functions only order, group and cut.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...models.feedback import Attempt, CycleFeedback, FindingEntry, HumanResponse, RetryEntry, ReviewFinding
from ..reading.fingerprint import normalise_message
from ..wording.book import Book

APPROACH_CHARS = 300


def failure_summary(prompts: Book, step: str, cycle: int, rejected: list[Attempt]) -> str:
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


EntryText = Callable[[Any], str]
SEPARATOR = "\n\n"  # between the notice, the sections, a header and its entries, two entries


class _Section(NamedTuple):
    """One section of the text: its header, how an entry reads, and its entries."""

    header: str
    text: EntryText  # an entry's text, its template bound once: a long history renders dozens
    length: int  # how many entries it has
    newest: Callable[[int], Iterable[Keyed]]  # its entries newest first, given its place


def _newest_first(section: int, entries: Sequence[Any], times: Iterable[str]) -> list[Keyed]:
    return sorted(
        ((at, section, i, e) for i, (at, e) in enumerate(zip(times, entries, strict=True))), reverse=True
    )


def _escalation_section(prompts: Book, step: str, escalations: Sequence[CycleFeedback]) -> _Section:
    fill = prompts.filler("feedback_escalation_entry", "cycle", "source_step", "source_cycle", "summary")

    def text(e: CycleFeedback) -> str:
        return fill(cycle=e.cycle, source_step=e.source_step, source_cycle=e.source_cycle, summary=e.summary)

    return _Section(
        prompts.render("feedback_escalation_header", step=step),
        text,
        len(escalations),
        lambda section: _newest_first(section, escalations, (e.at for e in escalations)),
    )


def _retry_section(prompts: Book, step: str, retries: Iterable[RetryEntry], count: int) -> _Section:
    """Retries come newest first from the store and are read only as far as the fill goes."""
    fill = prompts.filler("feedback_retry_entry", "attempts", "count", "feedback", "guard")

    def text(r: RetryEntry) -> str:
        return fill(attempts=r.attempts, count=r.attempt_count, feedback=r.feedback, guard=r.guard or "-")

    return _Section(
        prompts.render("feedback_retry_header", step=step),
        text,
        count,
        lambda section: ((r.at, section, r.first_attempt, r) for r in retries),
    )


def _finding_section(prompts: Book, findings: Sequence[FindingEntry]) -> _Section:
    fill = prompts.filler(
        "feedback_finding_entry", "stage", "kind", "status", "iteration", "failure_reason", "response"
    )
    return _Section(
        prompts.render("feedback_findings_header"),
        lambda f: fill(**finding_values(f)),
        len(findings),
        lambda section: _newest_first(section, findings, (f.at for f in findings)),
    )


def _human_section(prompts: Book, responses: Sequence[HumanResponse]) -> _Section:
    fill = prompts.filler(
        "feedback_human_entry", "escalation_id", "type", "response_type", "content", "responder", "at"
    )

    def text(h: HumanResponse) -> str:
        return fill(
            escalation_id=h.escalation_id,
            type=h.type,
            response_type=h.response_type,
            content=h.content or "-",
            responder=h.responder or "-",
            at=h.at,
        )

    return _Section(
        prompts.render("feedback_human_header"),
        text,
        len(responses),
        lambda section: _newest_first(section, responses, (h.at for h in responses)),
    )


def _guidance_section(prompts: Book, guidance: Sequence[str]) -> _Section:
    """Guidance has no time: it is the last to be left out ("~" sorts after every ISO time)."""
    return _Section(
        prompts.render("feedback_guidance_header"),
        str,
        len(guidance),
        lambda section: _newest_first(section, guidance, ("~" for _ in guidance)),
    )


def render_sections(
    prompts: Book,
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
    # The sections in the order the text shows them; an entry's section is its place here.
    sections = (
        _escalation_section(prompts, step, escalations),
        _retry_section(prompts, step, retries, retry_count),
        _finding_section(prompts, findings),
        _human_section(prompts, responses),
        _guidance_section(prompts, guidance),
    )
    # (time, section, key) is unique, so the tuples compare without reaching the entries.
    newest: Iterator[Keyed] = heapq.merge(
        *(s.newest(place) for place, s in enumerate(sections)), reverse=True
    )
    budget = _Budget(
        texts=[s.text for s in sections],
        headers=[s.header for s in sections],
        notice=lambda omitted: prompts.render("feedback_omitted", omitted=omitted, max_chars=max_chars),
        max_chars=max_chars,
    )
    total = sum(s.length for s in sections)
    kept, overflowed = _fill(budget, newest, total)
    omitted = total - len(kept)
    if overflowed is not None and omitted > 1:
        older = _all_if_they_fit(budget, overflowed, omitted - 1, newest, kept)
        if older is not None:
            kept.extend(older)
            omitted = 0
    return _assemble(budget, kept, omitted, prompts)


class _Budget(NamedTuple):
    """What the fill measures against: the texts of entries, the headers, the notice."""

    texts: list[EntryText]  # per section
    headers: list[str]  # per section
    notice: Callable[[int], str]  # the line that says how many entries were left out
    max_chars: int


Kept = list[tuple[int, int, str]]  # (section, key, text)


def _fill(budget: _Budget, newest: Iterator[Keyed], total: int) -> tuple[Kept, Keyed | None]:
    """The entries that fit, newest first, and the first one that did not (None: all fit)."""
    # The text is [notice] + one part per non-empty section (its header, then its entries),
    # parts and entries separated by SEPARATOR; its length is kept as running totals.
    separator, headers, max_chars = len(SEPARATOR), budget.headers, budget.max_chars
    kept: Kept = []
    in_section = [0] * len(headers)
    body = 0  # sum of (entry + separator) over the kept entries
    header_chars = 0
    parts = 0
    longest = len(budget.notice(total)) if total else 0
    shortest = len(budget.notice(1)) if total else 0
    for position, keyed in zip(range(total - 1, -1, -1), newest, strict=False):
        _, section, key, entry = keyed
        text = budget.texts[section](entry)
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
                return kept, keyed
            size += len(budget.notice(position))
        if size > max_chars:
            return kept, keyed
        kept.append((section, key, text))
        body += len(text) + separator
        if new_section:
            header_chars += len(headers[section])
            parts += 1
        in_section[section] += 1
    return kept, None


def _assemble(budget: _Budget, kept: Kept, omitted: int, prompts: Book) -> Budgeted:
    """The text of the kept entries, each section in its entries' order, after the notice."""
    by_section: tuple[list[tuple[int, str]], ...] = tuple([] for _ in budget.headers)
    for section, key, text in kept:
        by_section[section].append((key, text))
    for entries in by_section:
        entries.sort()
    section_parts = [
        budget.headers[section] + SEPARATOR + SEPARATOR.join(text for _, text in entries)
        for section, entries in enumerate(by_section)
        if entries
    ]
    text = SEPARATOR.join([budget.notice(omitted), *section_parts] if omitted else section_parts)
    if len(text) > budget.max_chars:
        # Even what is left is too long (the notice alone): cut it, and say so.
        marker = prompts.render("feedback_truncated", max_chars=budget.max_chars)
        text = text[: max(0, budget.max_chars - len(marker))] + marker
    return Budgeted(text, omitted, tuple([key for key, _ in entries] for entries in by_section))


def _all_if_they_fit(
    budget: _Budget, overflowed: Keyed, older_count: int, older: Iterator[Keyed], kept: Kept
) -> Kept | None:
    """The entry that overflowed and every older one, if the whole text fits without the
    notice after all: the one case the newest-first fill cannot see from the entry that
    overflowed, possible only when the entries older than it are together shorter than
    the notice. None otherwise (reading only until they outweigh it)."""
    separator = len(SEPARATOR)
    _, section, key, entry = overflowed
    rest = [(section, key, budget.texts[section](entry))]
    allowance = len(budget.notice(older_count)) + separator
    weight = 0
    for _, section, key, entry in older:
        text = budget.texts[section](entry)
        rest.append((section, key, text))
        weight += len(text) + separator
        if weight >= allowance:
            return None  # they outweigh the notice: the whole is longer than what overflowed
    everything = kept + rest
    used = {section for section, _, _ in everything}
    size = sum(len(text) + separator for _, _, text in everything)
    size += sum(len(budget.headers[s]) for s in used) + separator * (len(used) - 1)
    return rest if size <= budget.max_chars else None
