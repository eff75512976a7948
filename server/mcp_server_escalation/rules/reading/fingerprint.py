"""Failure fingerprints.

A fingerprint is a stable signature of *what* went wrong, not *where*: the same error at
another line, in another temp directory or with another object id is the same error. It is
derived from structured fields plus the message with every volatile part replaced by a
placeholder, so two processes (or two versions of an agent) agree on it.

Of a multi-line message (a tool's output) only the salient error is read (rules/reading/salient.py):
the same failure printed with other noise around it (a debug print more, another count of
passing tests, a shorter traceback) is the same error. A one-line message, and an output
in which no error is recognised, is read whole. Measured on 250 real agent runs
(benchmarks/measure_fingerprints.py, docs/salient-errors.md): more repeats found, and no
two different errors mapped together.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from .salient import LINE_CHARS, find

# Order matters: the wider patterns run first so that, e.g., a UUID is not eaten piecemeal
# by the hex and number rules, and a quoted path is replaced as a literal, not as digits.
_NORMALISERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:z|[+-]\d{2}:?\d{2})?"),
        "<ts>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<ts>"),
    (
        re.compile(
            r"(?:/tmp|/var/tmp|/private/var/folders|/var/folders|[a-z]:\\users\\[^\\\s]+"
            r"\\appdata\\local\\temp)[^\s'\"`),;]*"
        ),
        "<tmp>",
    ),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "<str>"),
    (re.compile(r"\blines?\s+\d+(?:\s*,\s*col(?:umn)?\s+\d+)?"), "line <n>"),
    (re.compile(r":\d+(?::\d+)?\b"), ":<n>"),
    (re.compile(r"\b0x[0-9a-f]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)


# What a fingerprint keeps that search does not: a quoted name (a module, an attribute, a
# key: ``'srcdir'``) says *what* failed, so two errors about different names are two
# failures; any other quoted text (a path, a value, a repr) is volatile. Search keeps
# matching them across names (a past fix of ``KeyError: 'a'`` helps with ``'b'``).
_QUOTED_NAME = re.compile(r"(['\"])([a-z_][\w.\-]{0,63})\1")
_NAME_MARK = "\ue000"  # a private-use character: no rule touches it


@lru_cache(maxsize=4096)
def normalise_message(message: str, *, keep_names: bool = False) -> str:
    """The message lower-cased with volatile parts replaced by placeholders.

    ``keep_names`` keeps quoted names (what a fingerprint reads)."""
    text = message.lower()
    if keep_names:
        # Quoted names are unquoted behind a marker, so the string rule leaves them alone.
        text = _QUOTED_NAME.sub(lambda m: f"{_NAME_MARK}{m[2]}{_NAME_MARK}", text)
    for pattern, placeholder in _NORMALISERS:
        text = pattern.sub(placeholder, text)
    return text.replace(_NAME_MARK, "'").strip()


def message_key(message: str) -> str:
    """A digest of the normalised message: a query matches a record exactly when the keys agree.

    Stored with each record (migration 6) so that exact matches are found by index.
    """
    return hashlib.sha256(normalise_message(message).encode("utf-8")).hexdigest()[:16]


def fingerprinted_text(message: str) -> str:
    """The part of ``message`` its fingerprint reads (the module docstring says which)."""
    if "\n" not in message and "\r" not in message:
        return message
    found = find(message, LINE_CHARS)
    return message if found.kind == "text" else found.headline


def fingerprint(
    *,
    signal_type: str,
    step: str,
    message: str,
    error_type: str | None = None,
    tool_name: str | None = None,
    error_code: str | None = None,
) -> str:
    """A deterministic signature of a failure; file and line are deliberately absent."""
    parts = (
        signal_type,
        step,
        (error_type or "").strip().lower(),
        (tool_name or "").strip().lower(),
        (error_code or "").strip().lower(),
        normalise_message(fingerprinted_text(message), keep_names=True),
    )
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"fp-{digest[:16]}"
