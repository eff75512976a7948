"""Deterministic ranking of past failures as guidance (docs/guidance.md).

Order: exact matches first (the same fingerprint as the step's latest failure, or, with an
explicit query, the same normalised message), then a weighted score of lexical relevance
(FTS5 bm25, relative to the best candidate), severity, recency in whole days from a
passed-in ``now``, occurrence count and Laplace-smoothed helpfulness. Scores are rounded;
ties break by most recent, then oldest record. A record with clearly more harmful than
helpful outcomes (``harmful >= helpful + 3``) drops out; fewer harmful ones sink through
the helpfulness term. Same store and arguments, same output.

Which words are searched (``search_words``): the rare ones. A word in at least 1% of the
records, and at least ``DF_SAMPLE`` of them, is common: its bm25 weight is small, and
reading its doclist (to match it, or for bm25's IDF) is what made a query on 100,000
records slow. With no rare word, the least common one stands in (unscored, see
``services.guidance``). How many records hold a word is read from at most its first
``DF_SAMPLE`` index entries: exactly below that, extrapolated from how densely they lie
among the record ids above it (``document_frequency``). Among exact matches only the words
that set them apart can change their order: those the normalisation replaced
(``distinguishing_words``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from ..reading.fingerprint import normalise_message

# What splits a text into the index's tokens (``store.search_tokens.tokens``): the index's
# own tokenizer, passed in, since SQLite's defines it.
Split = Callable[[str], list[str]]

SEVERITY = {"low": 0.25, "medium": 0.5, "high": 0.75, "critical": 1.0}
WEIGHTS = {"lexical": 4.0, "severity": 2.0, "recency": 1.5, "occurrences": 1.0, "helpfulness": 2.0}
_W_LEXICAL, _W_SEVERITY, _W_RECENCY, _W_OCCURRENCES, _W_HELPFULNESS = WEIGHTS.values()
HARMFUL_MARGIN = 3
_OCCURRENCE_SCALE = math.log1p(50)
_VOLATILE = re.compile(r"^(?:\d+|(?=[0-9a-f]*\d)[0-9a-f]{7,})$")
MAX_QUERY_TOKENS = 32
DF_SAMPLE = 100
COMMON_SHARE = 0.01
FALLBACK_WORDS = 1


class Candidate(NamedTuple):
    """What ranking needs to know about one active failure record (a tuple: the store builds
    hundreds per call)."""

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


def _points(lexical: float, severity: str, days: int, occurrences: int, helpful: int, harmful: int) -> float:
    # Summed in the order of WEIGHTS (lexical, severity, recency, occurrences, helpfulness).
    total = (
        _W_LEXICAL * lexical
        + _W_SEVERITY * SEVERITY.get(severity, 0.5)
        + _W_RECENCY * (1 / (1 + days))
        + _W_OCCURRENCES * min(1.0, math.log1p(occurrences) / _OCCURRENCE_SCALE)
        + _W_HELPFULNESS * helpfulness(helpful, harmful)
    )
    return round(total, 4)


def _lexical(bm25: float | None, best_relevance: float) -> float:
    return -bm25 / best_relevance if bm25 is not None and best_relevance > 0 else 0.0


def score(candidate: Candidate, *, now: datetime, best_relevance: float, last_seen: datetime) -> float:
    """The weighted score of a candidate, rounded to 4 places."""
    c = candidate
    lexical = _lexical(c.bm25, best_relevance)
    days = whole_days(last_seen, now)
    return _points(lexical, c.severity, days, c.occurrence_count, c.helpful_count, c.harmful_count)


def rank(
    candidates: list[Candidate], *, now: datetime, k: int, parse: Callable[[str], datetime]
) -> list[tuple[Candidate, float]]:
    """The top ``k`` candidates with their scores, in a fully deterministic order."""
    kept = [c for c in candidates if not clearly_harmful(c.helpful_count, c.harmful_count)]
    best = max((-c.bm25 for c in kept if c.bm25 is not None), default=0.0)
    order = []
    for c in kept:  # score(), unrolled: this runs for every candidate
        seen = parse(c.last_seen_at)
        days = (now - seen).days
        s = _points(
            _lexical(c.bm25, best),
            c.severity,
            days if days > 0 else 0,
            c.occurrence_count,
            c.helpful_count,
            c.harmful_count,
        )
        order.append((not c.exact, -s, -seen.timestamp(), c.seq, s, c))
    # Exact first, then score, then most recent, then oldest record; seq is unique, so the
    # comparison never reaches the candidate itself.
    return [(item[5], item[4]) for item in heapq.nsmallest(k, order)]


def query_tokens(text: str, split: Split) -> list[str]:
    """The query's distinct index tokens (lower-cased, accent-free, as ``split`` makes
    them), without the volatile ones the fingerprint also ignores (numbers, hex ids):
    "expected 3 got 4" must find "expected 5 got 6". Each is one token of the index on
    either backend."""
    seen: dict[str, None] = {}
    for token in split(text):
        if _VOLATILE.match(token):
            continue
        seen.setdefault(token, None)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return list(seen)


class Match(NamedTuple):
    """A full-text search: the records holding any of the tokens (or, ``all_of``, every
    one). Each backend renders it in its own query language."""

    tokens: tuple[str, ...]
    all_of: bool = False


def fts_query(tokens: list[str] | tuple[str, ...], *, all_of: bool = False) -> str:
    """An FTS5 MATCH expression no input can break: each token quoted, AND- or OR-joined."""
    joiner = " AND " if all_of else " OR "
    return joiner.join('"' + token.replace('"', '""') + '"' for token in tokens)


def document_frequency(count: int, last: int | None, records: int) -> float:
    """How many of the ``records`` hold a word, from its first ``DF_SAMPLE`` index entries.

    Fewer than the sample: exactly that many. Otherwise the sample's share of the record
    ids it spans (1 to ``last``), applied to all records.
    """
    if count < DF_SAMPLE or last is None:
        return float(count)
    return count * records / max(1, last)


def search_words(tokens: list[str], frequencies: list[float], records: int, *, fallback: bool) -> list[str]:
    """The words to search: the rare ones, rarest first (ties in query order); with none,
    and ``fallback``, the ``FALLBACK_WORDS`` least common the index holds."""
    known = sorted((f, i) for i, f in enumerate(frequencies) if f > 0)
    common = max(DF_SAMPLE, COMMON_SHARE * records)
    rare = [i for f, i in known if f < common]
    if not rare and fallback:
        rare = [i for _, i in known[:FALLBACK_WORDS]]
    return [tokens[i] for i in rare]


def distinguishing_words(text: str, split: Split) -> list[str]:
    """The query words the normalisation replaced (quoted names, temp paths, ...): the only
    ones that tell the records with the same normalised message apart."""
    kept = set(query_tokens(normalise_message(text), split))
    return [token for token in query_tokens(text, split) if token not in kept]
