"""Failure classification by documented, objective patterns.

The patterns live in ``data/failure_patterns.toml``; this module only applies them. A
failure's class decides whether it escalates at once (an external blocker), only after
repeating (a transient network error), or by the ordinary same-error rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

DETAIL_FIELDS = ("dependency", "version", "resource", "operation", "endpoint", "status_code")
DETAIL_MAX = 512


@dataclass(frozen=True)
class Pattern:
    """One named, compiled rule: a match means ``signal_type``."""

    name: str
    signal_type: str
    regex: re.Pattern[str]
    example: str = ""

    @classmethod
    def compile(cls, name: str, signal_type: str, regex: str, example: str = "") -> Pattern:
        """The rule for a case-insensitive ``regex``."""
        return cls(name, signal_type, re.compile(regex, re.IGNORECASE), example)


@dataclass(frozen=True)
class Extractor:
    """Fills blocker details of one class from a message."""

    signal_type: str
    regex: re.Pattern[str]


# eq=False: compared and hashed by identity. classify() is cached per book, and hashing
# every pattern of the book on each call cost more than most cache hits save.
@dataclass(frozen=True, eq=False)
class PatternBook:
    """The ordered patterns and extractors of the data file (one per process)."""

    patterns: tuple[Pattern, ...]
    extractors: tuple[Extractor, ...] = field(default=())


class BlockerDetails(BaseModel):
    """Facts about an external blocker; what the operator needs to remove it."""

    model_config = ConfigDict(extra="forbid")

    # Names, not outputs: a few hundred characters each, as the other names of a failure.
    dependency: Annotated[str, Field(max_length=DETAIL_MAX)] | None = None
    version: Annotated[str, Field(max_length=DETAIL_MAX)] | None = None
    resource: Annotated[str, Field(max_length=DETAIL_MAX)] | None = None
    operation: Annotated[str, Field(max_length=DETAIL_MAX)] | None = None
    endpoint: Annotated[str, Field(max_length=DETAIL_MAX)] | None = None
    status_code: Annotated[int, Field(ge=0, le=999)] | None = None


@dataclass(frozen=True)
class Classification:
    """The class chosen for a message, the rule that chose it and the facts it found."""

    signal_type: str
    rule: str
    details: dict[str, str | int] = field(default_factory=dict)


def _groups(match: re.Match[str]) -> dict[str, str | int]:
    found: dict[str, str | int] = {}
    for name, value in match.groupdict().items():
        if not value:
            continue
        # A regex cannot reuse a group name, so alternatives are numbered (dependency2).
        key = name.rstrip("0123456789")
        if key not in DETAIL_FIELDS or key in found:
            continue
        found[key] = int(value) if key == "status_code" and value.isdigit() else value
    return found


@lru_cache(maxsize=2048)
def classify(
    message: str,
    book: PatternBook,
    *,
    error_type: str | None = None,
    tool_name: str | None = None,
) -> Classification:
    """The signal type of an unclassified failure, by the first pattern that matches.

    Cached: a stuck agent sends the same message again and again, which is the point.
    The result is frozen; callers copy ``details`` before changing it.
    """
    text = f"{error_type}: {message}" if error_type else message
    for pattern in book.patterns:
        match = pattern.regex.search(text)
        if match:
            details = _groups(match)
            return Classification(
                pattern.signal_type,
                pattern.name,
                extract_details(text, pattern.signal_type, book, details),
            )
    if tool_name:
        return Classification("tool_error", "default_with_tool_name")
    return Classification("runtime_error", "default")


def extract_details(
    message: str,
    signal_type: str,
    book: PatternBook,
    known: dict[str, str | int] | None = None,
) -> dict[str, str | int]:
    """Blocker details for ``signal_type`` found in the message, never overriding ``known``."""
    details = dict(known or {})
    for extractor in book.extractors:
        if extractor.signal_type != signal_type:
            continue
        match = extractor.regex.search(message)
        if match:
            for key, value in _groups(match).items():
                details.setdefault(key, value)
    return details
