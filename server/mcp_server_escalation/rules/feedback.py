"""Pure assembly of a step's feedback: collapsing retries, the failure summary of a
stagnation cycle, and rendering sections within a character budget (SPEC 5).

All wording comes from the prompt book passed in; these functions only order, group and cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..models.feedback import Attempt, CycleFeedback, FindingEntry, HumanResponse, RejectedAttempts
from ..prompts import PromptBook
from .fingerprint import normalise_message

APPROACH_CHARS = 300


# A collapsed retry entry: the feedback (stripped) and the positions, in the step's
# ``RejectedAttempts``, of the attempts that got it, oldest first. A plain tuple: a long step
# has hundreds of them per call.
RetryGroup = tuple[str, list[int]]


def collapse_retries(rejected: RejectedAttempts) -> list[RetryGroup]:
    """Identical feedback (after ``strip``) collapsed into one entry; entries in the order
    of their first attempt."""
    groups: dict[str, list[int]] = {}
    for position, feedback in enumerate(rejected.feedback):
        text = feedback.strip()
        members = groups.get(text)
        if members is None:
            groups[text] = [position]
        else:
            members.append(position)
    return list(groups.items())


def attempt_numbers(rejected: RejectedAttempts, group: RetryGroup) -> list[int]:
    """The attempt numbers collapsed into ``group``, oldest first."""
    numbers = rejected.numbers
    return [numbers[p] for p in group[1]]


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


@dataclass(frozen=True, slots=True)
class Budgeted:
    """The rendered feedback, how many entries were left out, and which were kept: per
    section (escalations, retries, findings, responses, guidance) the indices of its entries
    in the text, in their order there."""

    text: str
    omitted: int
    kept: tuple[list[int], ...]


def render_sections(
    prompts: PromptBook,
    *,
    step: str,
    escalations: Sequence[CycleFeedback],
    rejected: RejectedAttempts,
    retries: Sequence[RetryGroup],
    findings: Sequence[FindingEntry],
    responses: Sequence[HumanResponse],
    guidance: Sequence[str],
    max_chars: int,
) -> Budgeted:
    """The sections within ``max_chars``: the oldest entries (ties: earlier section first) are
    left out until the text fits, and the text says how many.

    The budget is filled newest first and an entry is rendered only when it is reached, so a
    long history costs the entries that fit (plus one), not every entry it has."""
    render = prompts.render

    def escalation(e: CycleFeedback) -> str:
        return render(
            "feedback_escalation_entry",
            cycle=e.cycle,
            source_step=e.source_step,
            source_cycle=e.source_cycle,
            summary=e.summary,
        )

    def retry(r: RetryGroup) -> str:
        text, members = r
        return render(
            "feedback_retry_entry",
            attempts=", ".join(map(str, attempt_numbers(rejected, r))),
            count=len(members),
            feedback=text,
            guard=rejected.guards[members[-1]] or "-",
        )

    def finding(f: FindingEntry) -> str:
        return render(
            "feedback_finding_entry",
            stage=f.stage,
            kind=f.kind,
            status=f.status,
            iteration=f.iteration,
            failure_reason=f.failure_reason or "-",
            response=f.response,
        )

    def response(h: HumanResponse) -> str:
        return render(
            "feedback_human_entry",
            escalation_id=h.escalation_id,
            type=h.type,
            response_type=h.response_type,
            content=h.content or "-",
            responder=h.responder or "-",
            at=h.at,
        )

    # Each entry's time decides when it is dropped. Guidance has none: it is already ranked
    # and short, the newest and most specific advice, so it goes last ("~" sorts after
    # every ISO time).
    order: list[tuple[str, int, int]] = []
    order.extend((e.at, 0, i) for i, e in enumerate(escalations))
    last_at = rejected.at
    order.extend((last_at[members[-1]], 1, i) for i, (_, members) in enumerate(retries))
    order.extend((f.at, 2, i) for i, f in enumerate(findings))
    order.extend((h.at, 3, i) for i, h in enumerate(responses))
    order.extend(("~", 4, i) for i in range(len(guidance)))
    order.sort()

    def entry(section: int, index: int) -> str:
        if section == 0:
            return escalation(escalations[index])
        if section == 1:
            return retry(retries[index])
        if section == 2:
            return finding(findings[index])
        if section == 3:
            return response(responses[index])
        return guidance[index]

    headers = [
        render("feedback_escalation_header", step=step) if escalations else "",
        render("feedback_retry_header", step=step) if retries else "",
        render("feedback_findings_header") if findings else "",
        render("feedback_human_header") if responses else "",
        render("feedback_guidance_header") if guidance else "",
    ]

    def notice(omitted: int) -> str:
        return render("feedback_omitted", omitted=omitted, max_chars=max_chars)

    # The text is [notice] + one part per non-empty section (its header, then its entries),
    # parts and entries separated by "\n\n"; its length is kept as running totals.
    separator = 2
    texts: dict[tuple[int, int], str] = {}
    in_section = [0] * len(headers)
    body = 0  # sum of (entry + separator) over the kept entries
    header_chars = 0
    parts = 0
    kept_from = len(order)  # order[kept_from:] is kept
    longest = len(notice(len(order))) if order else 0
    shortest = len(notice(1)) if order else 0
    for position in range(len(order) - 1, -1, -1):
        _, section, index = order[position]
        text = entry(section, index)
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
                break
            size += len(notice(position))
        if size > max_chars:
            break
        texts[section, index] = text
        body += len(text) + separator
        if new_section:
            header_chars += len(headers[section])
            parts += 1
        in_section[section] += 1
        kept_from = position

    overflowed = kept_from - 1  # the entry whose size check failed (with the notice)
    if overflowed > 0 and _everything_fits(order, overflowed, texts, entry, headers, notice, max_chars):
        kept_from = 0

    omitted = kept_from
    kept: tuple[list[int], ...] = tuple([] for _ in headers)
    for _, section, index in sorted(order[kept_from:], key=lambda key: (key[1], key[2])):
        kept[section].append(index)
    section_parts = [
        headers[section] + "\n\n" + "\n\n".join(texts[section, i] for i in indices)
        for section, indices in enumerate(kept)
        if indices
    ]
    text = "\n\n".join([notice(omitted), *section_parts] if omitted else section_parts)
    if len(text) > max_chars:
        # Even what is left is too long (the notice alone): cut it, and say so.
        marker = render("feedback_truncated", max_chars=max_chars)
        text = text[: max(0, max_chars - len(marker))] + marker
    return Budgeted(text, omitted, kept)


def _everything_fits(
    order: list[tuple[str, int, int]],
    overflowed: int,
    texts: dict[tuple[int, int], str],
    entry: Callable[[int, int], str],
    headers: list[str],
    notice: Callable[[int], str],
    max_chars: int,
) -> bool:
    """Whether the whole text, without the notice, fits after all: the one case the
    newest-first fill cannot see from the entry that overflowed, possible only when the
    entries older than it are together shorter than the notice. Fills ``texts`` if so."""
    separator = 2
    allowance = len(notice(overflowed)) + separator
    older = 0
    for _, section, index in reversed(order[:overflowed]):
        text = entry(section, index)
        texts[section, index] = text
        older += len(text) + separator
        if older >= allowance:
            return False  # they outweigh the notice: the whole is longer than what overflowed
    _, section, index = order[overflowed]
    texts[section, index] = entry(section, index)
    used = {section for _, section, _ in order}
    size = sum(len(text) + separator for text in texts.values())
    size += sum(len(headers[s]) for s in used) + separator * (len(used) - 1)
    return size <= max_chars
