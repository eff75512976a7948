"""Stagnation: the one rule that compares texts, with a fixed, deterministic measure.

Similarity is the Jaccard index of the word sets of two feedback texts after the
fingerprint normalisation (numbers, ids, paths and quoted literals replaced), so "expected
3, got 4" and "expected 5, got 6" are the same complaint. No model, no randomness: the
same texts always give the same number.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..reading.fingerprint import normalise_message

_WORD = re.compile(r"[a-z0-9_<>]+")


@lru_cache(maxsize=4096)
def words(text: str) -> frozenset[str]:
    """The normalised word set of a text."""
    return frozenset(_WORD.findall(normalise_message(text)))


def similarity(a: str, b: str) -> float:
    """Jaccard index of the two word sets, rounded; two empty texts are identical."""
    left, right = words(a), words(b)
    union = left | right
    if not union:
        return 1.0
    return round(len(left & right) / len(union), 4)


def similar_run(feedback: list[str], patience: int, threshold: float) -> int:
    """Length of the longest run at the end of ``feedback`` whose members are pairwise
    similar at or above ``threshold``; 0 when it is shorter than ``patience``."""
    run: list[str] = []
    for text in reversed(feedback):
        if all(similarity(text, other) >= threshold for other in run):
            run.append(text)
        else:
            break
    return len(run) if len(run) >= patience else 0
