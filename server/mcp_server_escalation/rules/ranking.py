"""Deterministic ranking of past failures as guidance (SPEC 5, seed 004).

Order: exact matches first (the same fingerprint as the step's latest failure, or, with an
explicit query, the same normalised message), then a weighted score of lexical relevance
(FTS5 bm25, relative to the best candidate), severity, recency in whole days from a
passed-in ``now``, occurrence count and Laplace-smoothed helpfulness. Scores are rounded;
ties break by most recent, then oldest record. A record with clearly more harmful than
helpful outcomes (``harmful >= helpful + 3``) drops out; fewer harmful ones sink through
the helpfulness term. Same store and arguments, same output.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

SEVERITY = {"low": 0.25, "medium": 0.5, "high": 0.75, "critical": 1.0}
WEIGHTS = {"lexical": 4.0, "severity": 2.0, "recency": 1.5, "occurrences": 1.0, "helpfulness": 2.0}
HARMFUL_MARGIN = 3
_OCCURRENCE_SCALE = math.log1p(50)
_TOKEN = re.compile(r"[^\W_]+")
_VOLATILE = re.compile(r"^(?:\d+|(?=[0-9a-f]*\d)[0-9a-f]{7,})$")
MAX_QUERY_TOKENS = 32


@dataclass(frozen=True)
class Candidate:
    """What ranking needs to know about one active failure record."""

    seq: int
    severity: str
    last_seen_at: str
    occurrence_count: int
    helpful_count: int
    harmful_count: int
    exact: bool
    bm25: float | None  # FTS5 bm25 (lower is better), None when not a lexical match


def helpfulness(helpful: int, harmful: int) -> float:
    """Laplace-smoothed share of helpful outcomes: 0.5 with no evidence."""
    return (helpful + 1) / (helpful + harmful + 2)


def clearly_harmful(helpful: int, harmful: int) -> bool:
    """Harmful outcomes outnumber helpful ones by the margin: drop the record."""
    return harmful >= helpful + HARMFUL_MARGIN


def whole_days(last_seen: datetime, now: datetime) -> int:
    """Days between the two, floored, never negative."""
    return max(0, (now - last_seen).days)


def score(candidate: Candidate, *, now: datetime, best_relevance: float, last_seen: datetime) -> float:
    """The weighted score of a candidate, rounded to 4 places."""
    relevance = -candidate.bm25 if candidate.bm25 is not None else 0.0
    lexical = relevance / best_relevance if best_relevance > 0 else 0.0
    parts = {
        "lexical": lexical,
        "severity": SEVERITY.get(candidate.severity, 0.5),
        "recency": 1 / (1 + whole_days(last_seen, now)),
        "occurrences": min(1.0, math.log1p(candidate.occurrence_count) / _OCCURRENCE_SCALE),
        "helpfulness": helpfulness(candidate.helpful_count, candidate.harmful_count),
    }
    return round(sum(WEIGHTS[name] * value for name, value in parts.items()), 4)


def rank(
    candidates: list[Candidate], *, now: datetime, k: int, parse: Callable[[str], datetime]
) -> list[tuple[Candidate, float]]:
    """The top ``k`` candidates with their scores, in a fully deterministic order."""
    kept = [c for c in candidates if not clearly_harmful(c.helpful_count, c.harmful_count)]
    best = max((-c.bm25 for c in kept if c.bm25 is not None), default=0.0)
    scored = []
    for c in kept:
        seen = parse(c.last_seen_at)
        scored.append((c, score(c, now=now, best_relevance=best, last_seen=seen), seen.timestamp()))
    scored.sort(key=lambda item: (not item[0].exact, -item[1], -item[2], item[0].seq))
    return [(c, s) for c, s, _ in scored[:k]]


def query_tokens(text: str) -> list[str]:
    """Lower-cased, accent-free word tokens as FTS5's unicode61 tokenizer sees them, without
    the volatile ones the fingerprint also ignores (numbers, hex ids): "expected 3 got 4"
    must find "expected 5 got 6"."""
    plain = "".join(ch for ch in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(ch))
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(plain):
        if _VOLATILE.match(token):
            continue
        seen.setdefault(token, None)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return list(seen)


def fts_query(tokens: list[str], *, all_of: bool = False) -> str:
    """An FTS5 MATCH expression no input can break: each token quoted, AND- or OR-joined."""
    joiner = " AND " if all_of else " OR "
    return joiner.join('"' + token.replace('"', '""') + '"' for token in tokens)
