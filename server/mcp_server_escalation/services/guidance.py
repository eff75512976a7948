"""Top-k guidance from past failures (SPEC 5, seed 004) and their revision.

Candidates come from three bounded index lookups (exact fingerprint, FTS5 bm25, recent);
``rules.ranking`` orders them. Nothing reads all records of a project.
"""

from __future__ import annotations

from ..clock import parse_iso
from ..errors import InvalidInput, NotFound
from ..models.failures import FailureRecord
from ..models.guidance import FailureView, GuidanceItem, GuidanceResult
from ..rules import ranking
from ..rules.fingerprint import normalise_message
from ..store import failures as failure_store
from ..store import guidance as guidance_store
from ..store.db import Conn
from .runtime import Runtime
from .tasks import load_task

LINE_CHARS = 300
# How many of the newest FTS matches are scored (see store.guidance.lexical).
PRECISE_WINDOW = 400
BROAD_WINDOW = 300
SIGNATURE_CHARS = 120
ADJUSTMENT_CHARS = 140
RECENT_OCCURRENCES = 20


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _item(rt: Runtime, record: FailureRecord, score: float, exact: bool) -> GuidanceItem:
    kind = record.error_type or record.tool_name or "-"
    summary = rt.prompts.render(
        "guidance_signature",
        signal_type=record.signal_type,
        kind=kind,
        message=_clip(record.message, SIGNATURE_CHARS),
    )
    adjustment = record.recommended_adjustment
    line = rt.prompts.render(
        "guidance_line",
        severity=record.severity,
        signature=summary,
        adjustment=_clip(adjustment, ADJUSTMENT_CHARS)
        if adjustment
        else rt.prompts.render("guidance_no_adjustment"),
        count=record.occurrence_count,
        last_seen=record.last_seen_at[:10],
        helpful=record.helpful_count,
        harmful=record.harmful_count,
        failure_id=record.failure_id,
    )
    return GuidanceItem(
        failure_id=record.failure_id,
        severity=record.severity,
        signal_type=record.signal_type,
        summary=summary,
        recommended_adjustment=adjustment,
        occurrence_count=record.occurrence_count,
        last_seen_at=record.last_seen_at,
        helpful_count=record.helpful_count,
        harmful_count=record.harmful_count,
        score=score,
        exact_match=exact,
        fingerprint=record.fingerprint,
        task_id=record.task_id,
        step=record.step,
        line=_clip(line, LINE_CHARS),
    )


def build_guidance(
    rt: Runtime,
    conn: Conn,
    *,
    task_id: str,
    query: str | None,
    step: str | None,
    k: int,
    scope: str,
) -> GuidanceResult:
    """The top ``k`` active records of the scope for the query (or the step's latest failure)."""
    task = load_task(conn, task_id)
    where = (
        guidance_store.Scope("task_id", task_id)
        if scope == "task"
        else guidance_store.Scope("project", task.project)
    )
    explicit = query is not None and query.strip() != ""
    reference = None if explicit else guidance_store.latest_failure(conn, task_id, step)
    text = query if explicit and query is not None else (reference.message if reference else "")

    pool: dict[int, guidance_store.Hit] = {}
    if reference is not None:
        for hit in guidance_store.by_fingerprint(conn, where, reference.fingerprint):
            pool[hit.seq] = hit
    tokens = ranking.query_tokens(text)
    if tokens:
        # Precise first: records with every word of the query. Then, when that finds fewer
        # than k, any word (the OR query). Both are quoted token lists: no syntax errors.
        precise = guidance_store.lexical(
            conn, where, ranking.fts_query(tokens, all_of=True), newest=PRECISE_WINDOW
        )
        broad = (
            []
            if len(precise) >= k
            else guidance_store.lexical(conn, where, ranking.fts_query(tokens), newest=BROAD_WINDOW)
        )
        for hit in broad + precise:
            pool[hit.seq] = hit
    if not text.strip():
        for hit in guidance_store.recent(conn, where):
            pool.setdefault(hit.seq, hit)

    wanted = normalise_message(text) if explicit else None
    candidates = [
        ranking.Candidate(
            seq=seq,
            severity=hit.severity,
            last_seen_at=hit.last_seen_at,
            occurrence_count=hit.occurrence_count,
            helpful_count=hit.helpful_count,
            harmful_count=hit.harmful_count,
            bm25=hit.relevance,
            exact=(hit.fingerprint == reference.fingerprint)
            if reference is not None
            else normalise_message(hit.message) == wanted,
        )
        for seq, hit in sorted(pool.items())
    ]
    ranked = ranking.rank(candidates, now=rt.clock(), k=k, parse=parse_iso)
    items = [_item(rt, pool[c.seq].record(), s, c.exact) for c, s in ranked]
    return GuidanceResult(
        items=items,
        rendered="\n".join(i.line for i in items),
        query=text,
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
) -> GuidanceResult:
    """At most ``k`` relevant past failures as compact structured guidance."""
    return await rt.db.read(
        lambda conn: build_guidance(rt, conn, task_id=task_id, query=query, step=step, k=k, scope=scope)
    )


def _load(conn: Conn, field: str, failure_id: str) -> FailureRecord:
    seq = failure_store.parse_failure_id(failure_id)
    record = failure_store.get(conn, seq) if seq is not None else None
    if record is None:
        raise NotFound(field, failure_id, "Failure ids look like F-12; get_guidance lists them.")
    return record


def failure_view(conn: Conn, failure_id: str) -> FailureView:
    """A record with its latest occurrences and its revision history."""
    record = _load(conn, "failure_id", failure_id)
    return FailureView(
        failure=record,
        occurrences=failure_store.recent_occurrences(conn, record.failure_id, RECENT_OCCURRENCES),
        revisions=guidance_store.revisions(conn, _seq(record)),
    )


async def show_failure(rt: Runtime, failure_id: str) -> FailureView:
    """The full record behind a guidance line."""
    return await rt.db.read(lambda conn: failure_view(conn, failure_id))


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
        return failure_view(conn, failure_id)

    return await rt.db.write(work)
