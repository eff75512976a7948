"""Full-text search as SQLite's FTS5 index does it, for the backends that have no FTS5.

On SQLite the failure records' words are indexed by FTS5 (its ``unicode61`` tokenizer with
``remove_diacritics 2``, over the columns of ``COLUMNS``) and ranked by its ``bm25()``. On
PostgreSQL the same words must be indexed and weighed alike, or the same store would give
a different top-k. The tokens themselves come from FTS5's own tokenizer
(``store.search_tokens``); this module holds the rules both backends share:

- ``index_terms``: what a record's indexed columns hold, token by token and column by
  column, and how many tokens in all: what bm25 reads of one record;
- ``lexeme``: a token as PostgreSQL can store it;
- ``bm25``: FTS5's bm25 with the same arithmetic, in the same order, so the same inputs
  give the same float.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

# The indexed columns of failure records, in FTS5's column order (SQLite's migration 7);
# the attempted action is not indexed.
COLUMNS = ("message", "error_type", "tool_name", "signal_type", "recommended_adjustment")
# FTS5's bm25 constants.
K1 = 1.2
B = 0.75
# PostgreSQL keeps a lexeme of under 2 KiB (and silently cuts a longer one in a tsvector):
# a longer token is stored and searched as its hash, which no token can equal ("#" is a
# separator to FTS5).
MAX_LEXEME_BYTES = 1024


def lexeme(token: str) -> str:
    """The token as PostgreSQL stores and searches it: itself, or the hash of a long one."""
    raw = token.encode()
    return token if len(raw) <= MAX_LEXEME_BYTES else "#" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class Terms:
    """What one record's indexed columns hold: per lexeme, its count in each column (in
    ``COLUMNS`` order), and the number of tokens in all."""

    counts: dict[str, list[int]]
    size: int


def index_terms(columns: Sequence[Sequence[str]]) -> Terms:
    """The terms of a record whose indexed columns (``COLUMNS`` order) hold these tokens."""
    counts: dict[str, list[int]] = {}
    size = 0
    for position, column in enumerate(columns):
        for token in column:
            per_column = counts.setdefault(lexeme(token), [0] * len(COLUMNS))
            per_column[position] += 1
            size += 1
    return Terms(counts, size)


def idf(records: int, holding: int) -> float:
    """FTS5's inverse document frequency of a token that ``holding`` of ``records`` hold
    (never below 1e-6, so a token in most records still counts a little)."""
    value = math.log((records - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else 1e-6


def frequency(per_column: Sequence[int] | None, weights: Sequence[float]) -> float:
    """A token's weighted frequency in one record: each occurrence adds its column's
    weight, in FTS5's order (column by column), so the sum rounds as FTS5's does."""
    total = 0.0
    for count, weight in zip(per_column or (), weights, strict=False):
        for _ in range(count):
            total += weight
    return total


def bm25(frequencies: Sequence[float], idfs: Sequence[float], size: int, average_size: float) -> float:
    """FTS5's bm25 of one record (lower is better): ``frequencies`` and ``idfs`` per query
    token in query order, ``size`` the record's tokens, ``average_size`` the index's."""
    score = 0.0
    for f, weight in zip(frequencies, idfs, strict=True):
        score += weight * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * size / average_size)))
    return -1.0 * score
