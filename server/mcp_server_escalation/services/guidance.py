"""Top-k guidance from past failures (docs/guidance.md) and their revision.

Candidates come from bounded index lookups: exact matches (fingerprint, or the normalised
message's key), then the FTS5 index (bm25) on the query's rare words (once ``k`` exact
matches are kept, only on the words that tell them apart), or the most recent records when
there is no text. ``rules.guidance.ranking`` chooses the words and orders the candidates. Nothing
reads all records of a project, and only the ``k`` rows of the answer are read in full.
"""

from __future__ import annotations

from ..clock import parse_iso
from ..errors import InvalidInput, NotFound
from ..models.failures import FailureRecord, WholeFailure
from ..models.guidance import FailureView, GuidanceItem, GuidanceResult
from ..rules.bounds.token_scope import Scope
from ..rules.guidance import ranking
from ..rules.reading import host_errors
from ..rules.reading.fingerprint import message_key
from ..rules.reading.salient import headline
from ..rules.reading.whole_error import shown_occurrences
from ..store import failures as failure_store
from ..store import guidance as guidance_store
from ..store import search_tokens
from ..store.sql import Conn
from .runtime import Runtime
from .tasks import load_project

LINE_CHARS = 300
# How many of the newest FTS matches are scored (see store.guidance.lexical).
PRECISE_WINDOW = 400
BROAD_WINDOW = 300
SIGNATURE_CHARS = 120
QUERY_CHARS = 200
ADJUSTMENT_CHARS = 140
# What failure://{id} shows of a record's history, and what update_failure answers with:
# the agent that updates a record needs its state, not its history (results stay
# small whatever the history; the resource shows more).
RECENT_OCCURRENCES = 20
UPDATED_SHOWN = 3


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _item(rt: Runtime, row: guidance_store.GuidanceRow, score: float, exact: bool) -> GuidanceItem:
    kind = row.error_type or row.tool_name or "-"
    failure_id = failure_store.failure_id(row.seq)
    summary = rt.prompts.render(
        "guidance_signature",
        signal_type=row.signal_type,
        kind=kind,
        # A recorded tool output is summarised by its error line, not by its banner.
        message=headline(row.message, SIGNATURE_CHARS),
    )
    adjustment = row.recommended_adjustment
    line = rt.prompts.render(
        "guidance_line",
        severity=row.severity,
        signature=summary,
        adjustment=_clip(adjustment, ADJUSTMENT_CHARS)
        if adjustment
        else rt.prompts.render("guidance_no_adjustment"),
        count=row.occurrence_count,
        last_seen=row.last_seen_at[:10],
        helpful=row.helpful_count,
        harmful=row.harmful_count,
        failure_id=failure_id,
    )
    return GuidanceItem(
        failure_id=failure_id,
        severity=row.severity,
        signal_type=row.signal_type,
        summary=summary,
        recommended_adjustment=adjustment,
        occurrence_count=row.occurrence_count,
        last_seen_at=row.last_seen_at,
        helpful_count=row.helpful_count,
        harmful_count=row.harmful_count,
        score=score,
        exact_match=exact,
        task_id=row.task_id,
        step=row.step,
        line=_clip(line, LINE_CHARS),
    )


def _kept(pool: dict[int, ranking.Candidate]) -> int:
    return sum(not ranking.clearly_harmful(c.helpful_count, c.harmful_count) for c in pool.values())


def _lexical(
    conn: Conn,
    where: guidance_store.Scope,
    tokens: list[str],
    exact: guidance_store.Exact | None,
    need: int,
) -> list[ranking.Candidate]:
    """Full-text candidates on the rare words: records with all of them, then (if ``need`` is not
    met) any of them. With no rare word and something still needed, the newest records that
    hold the least common word, unscored (a common word's bm25 says little and costs most)."""
    if not tokens:
        return []
    stats = guidance_store.word_stats(conn, tokens, ranking.DF_SAMPLE)
    frequencies = [
        ranking.document_frequency(count, last, stats.records)
        for count, last in zip(stats.counts, stats.last, strict=True)
    ]
    words = ranking.search_words(tokens, frequencies, stats.records, fallback=False)
    if not words:
        stand_in = ranking.search_words(tokens, frequencies, stats.records, fallback=need > 0)
        if not stand_in:
            return []
        match = ranking.Match(tuple(stand_in))
        return guidance_store.lexical(
            conn, where, match, newest=BROAD_WINDOW, exact=exact, scored=False, stats=stats
        )
    broad_query = ranking.Match(tuple(words))
    held = stats.records_of(words) if len(words) > 1 else None
    if held is not None and len(set().union(*held)) < min(BROAD_WINDOW, guidance_store.CANDIDATES):
        # Every record holding any of the words is known, too few to reach a limit of the
        # broad search: it returns them all, and the precise matches among them are the
        # records holding every word, with the same bm25 (the same terms, summed alike).
        # One FTS5 query instead of two, the same candidates.
        broad = guidance_store.lexical(
            conn, where, broad_query, newest=BROAD_WINDOW, exact=exact, stats=stats
        )
        every = set.intersection(*held)
        precise = [c for c in broad if c.seq in every]
        return precise if len(precise) >= need else broad + precise
    precise = guidance_store.lexical(
        conn, where, ranking.Match(tuple(words), all_of=True), newest=PRECISE_WINDOW, exact=exact, stats=stats
    )
    if len(precise) >= need or len(words) == 1:
        return precise
    broad = guidance_store.lexical(conn, where, broad_query, newest=BROAD_WINDOW, exact=exact, stats=stats)
    return broad + precise


def build_guidance(
    rt: Runtime,
    conn: Conn,
    *,
    task_id: str,
    query: str | None,
    step: str | None,
    k: int,
    scope: str,
    project: str | None = None,
    within: Scope | None = None,
) -> GuidanceResult:
    """The top ``k`` active records of the scope for the query (or the step's latest failure).

    ``project`` is the task's, when the caller has read it already; ``within``: a scoped
    token's, whose answer keeps only the records of the tasks it may see."""
    project = project if project is not None else load_project(conn, task_id)
    where = (
        guidance_store.Scope("task_id", task_id)
        if scope == "task"
        else guidance_store.Scope("project", project)
    )
    explicit = query is not None and query.strip() != ""
    reference = None if explicit else guidance_store.latest_failure(conn, task_id, step)
    text = query if explicit and query is not None else (reference.message if reference else "")
    if reference is not None:
        exact = guidance_store.Exact("fingerprint", reference.fingerprint)
    elif explicit:
        exact = guidance_store.Exact("message_key", message_key(text))
    else:
        exact = None

    pool = {c.seq: c for c in guidance_store.exact_matches(conn, where, exact)} if exact else {}
    found = _kept(pool)
    # With k exact matches kept nothing else can rank among them: only the words that set
    # them apart are searched, for their lexical relevance.
    tokens = (
        ranking.query_tokens(text, search_tokens.tokens)
        if found < k
        else ranking.distinguishing_words(text, search_tokens.tokens)
    )
    for c in _lexical(conn, where, tokens, exact, k - found):
        pool[c.seq] = c
    if not text.strip():
        for c in guidance_store.recent(conn, where):
            pool.setdefault(c.seq, c)

    owners = guidance_store.guidance_rows(conn, list(pool))
    # The host's API errors are not the agent's to avoid repeating; a scoped token's answer
    # keeps only the records of the tasks it may see.
    pool = {
        seq: c
        for seq, c in pool.items()
        if not host_errors.is_host_error(owners[seq].signal_type, owners[seq].tool_name)
        and (within is None or within.admits(owners[seq].task_id, project))
    }
    candidates = [pool[seq] for seq in sorted(pool)]
    ranked = ranking.rank(candidates, now=rt.clock(), k=k, parse=parse_iso)
    rows = guidance_store.guidance_rows(conn, [c.seq for c, _ in ranked])
    items = [_item(rt, rows[c.seq], s, c.exact) for c, s in ranked]
    return GuidanceResult(
        items=items,
        rendered="\n".join(i.line for i in items),
        query=_clip(text, QUERY_CHARS),
        scope=scope,
        candidates=len(candidates),
    )


def _seq(record: FailureRecord) -> int:
    seq = failure_store.parse_failure_id(record.failure_id)
    if seq is None:
        raise RuntimeError(f"malformed failure id {record.failure_id}")
    return seq


async def get_guidance(
    rt: Runtime,
    *,
    task_id: str,
    query: str | None = None,
    step: str | None = None,
    k: int = 5,
    scope: str = "task",
    within: Scope | None = None,
) -> GuidanceResult:
    """At most ``k`` relevant past failures as compact structured guidance (``within``: only
    of the tasks a scoped token may see)."""
    return await rt.db.read(
        lambda conn: build_guidance(
            rt, conn, task_id=task_id, query=query, step=step, k=k, scope=scope, within=within
        )
    )


def _load(conn: Conn, field: str, failure_id: str) -> FailureRecord:
    seq = failure_store.parse_failure_id(failure_id)
    record = failure_store.get(conn, seq) if seq is not None else None
    if record is None:
        raise NotFound(field, failure_id, "Failure ids look like F-12; get_guidance lists them.")
    return record


def failure_view(conn: Conn, failure_id: str, shown: int = RECENT_OCCURRENCES) -> FailureView:
    """A record with its latest ``shown`` occurrences and revisions, and how many are left out."""
    record = _load(conn, "failure_id", failure_id)
    occurrences = failure_store.recent_occurrences(conn, record.failure_id, shown)
    revisions, revision_count = guidance_store.revisions(conn, _seq(record), shown)
    return FailureView(
        failure=record,
        occurrences=occurrences,
        occurrences_omitted=record.occurrence_count - len(occurrences),
        revisions=revisions,
        revisions_omitted=revision_count - len(revisions),
    )


async def show_failure(rt: Runtime, failure_id: str) -> FailureView:
    """The full record behind a guidance line."""
    return await rt.db.read(lambda conn: failure_view(conn, failure_id))


async def whole_failure(rt: Runtime, failure_id: str, shown: int = RECENT_OCCURRENCES) -> WholeFailure:
    """A record with the whole output of its latest ``shown`` occurrences, the salient lines
    marked, and what changed from each to the next (what the operator's views show)."""

    def read(conn: Conn) -> WholeFailure:
        record = _load(conn, "failure_id", failure_id)
        # One more than shown: the first one shown is compared with the one before it.
        latest = failure_store.recent_occurrences(conn, record.failure_id, shown + 1)
        before = latest[0] if len(latest) > shown else None
        kept = latest[1:] if before is not None else latest
        first_number = record.occurrence_count - len(kept) + 1
        return WholeFailure(
            failure=record,
            headline=headline(kept[-1].message if kept else record.message),
            occurrences=shown_occurrences(kept, first_number, before),
            earlier_omitted=first_number - 1,
        )

    return await rt.db.read(read)


async def update_failure(
    rt: Runtime,
    *,
    failure_id: str,
    status: str | None = None,
    superseded_by: str | None = None,
    outcome: str | None = None,
    note: str | None = None,
) -> FailureView:
    """Resolve, supersede or reactivate a record, count an outcome; every change is audited."""
    if status is None and superseded_by is None and outcome is None and note is None:
        raise InvalidInput("status", "give at least one of status, superseded_by, outcome, note")
    if status not in (None, "superseded") and superseded_by is not None:
        raise InvalidInput("superseded_by", "goes only with status 'superseded' (or no status)")
    now = rt.now()

    def work(conn: Conn) -> FailureView:
        record = _load(conn, "failure_id", failure_id)
        new_status = status or ("superseded" if superseded_by is not None else record.status)
        replacement: int | None = None
        if new_status == "superseded":
            if superseded_by is None:
                raise InvalidInput(
                    "superseded_by", "status 'superseded' needs the id of the record that replaces it"
                )
            replacing = _load(conn, "superseded_by", superseded_by)
            if replacing.failure_id == record.failure_id:
                raise InvalidInput("superseded_by", "a record cannot supersede itself")
            replacement = _seq(replacing)
        helpful = record.helpful_count + (outcome == "helpful")
        harmful = record.harmful_count + (outcome == "harmful")
        before = {
            "status": record.status,
            "superseded_by": record.superseded_by,
            "helpful_count": record.helpful_count,
            "harmful_count": record.harmful_count,
        }
        after = {
            "status": new_status,
            "superseded_by": failure_store.failure_id(replacement) if replacement else None,
            "helpful_count": helpful,
            "harmful_count": harmful,
        }
        changes: dict[str, object] = {
            key: [before[key], after[key]] for key in before if before[key] != after[key]
        }
        if outcome is not None:
            changes["outcome"] = outcome
        guidance_store.update_record(
            conn, _seq(record), status=new_status, superseded_by=replacement, helpful=helpful, harmful=harmful
        )
        guidance_store.add_revision(conn, _seq(record), changes, note, now)
        return failure_view(conn, failure_id, UPDATED_SHOWN)

    return await rt.db.write(work)
