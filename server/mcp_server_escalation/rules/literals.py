"""Texts a regular expression cannot match without: a cheap test before the search.

Classifying a failure tries its message against every documented pattern in order, and
most messages match none or only the last ones. A pattern's search costs microseconds
(case-insensitive alternations are tried at every position); ``needle in text`` costs tens
of nanoseconds. So each pattern carries the texts of which every match holds at least one
(``required_texts``), and is searched only when the message holds one of them.

Sound by construction: the texts are read off the pattern's parse tree (the parser ``re``
itself uses), taking only what every match must contain: a run of literal characters in
sequence, a group, a repetition of at least one, or an alternation whose every branch has
such texts (their union). Anything else (classes, lookarounds, back references, optional
parts) yields nothing, and a pattern with nothing is always searched. The patterns are
case-insensitive: texts are lower-cased ASCII and compared with the message folded by
``fold``, which maps every character ``re.IGNORECASE`` matches with an ASCII letter to
that letter (``tests/test_classify.py`` checks this against every code point).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

# The parser of the standard library's re (3.11+; CPython keeps it private and typeshed does
# not describe it). Read by parse_tree alone; tests/test_classify.py fails when a Python
# release changes what it returns; without it every pattern is searched.
try:
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover
    _parser = None


def parse_tree(regex: re.Pattern[str]) -> list[tuple[Any, Any]] | None:
    """The items ``re`` compiles ``regex`` from, (operation, argument) pairs whose operation
    reads as its name (``LITERAL``, ``BRANCH``...), or None when there is no such parser."""
    try:
        return list(_parser.parse(regex.pattern, regex.flags))
    except Exception:  # noqa: BLE001 (no parser, or an unexpected one: search every pattern)
        return None


# The characters other than ASCII letters that re.IGNORECASE matches with an ASCII letter:
# dotted and dotless I, long S, Kelvin sign. str.lower() maps the first to "i" plus a
# combining dot, and leaves the next two alone, so they are mapped first.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def fold(text: str) -> str:
    """``text`` as the required texts are compared with it: lower case, special letters mapped."""
    return text.translate(_FOLD).lower()


def required_texts(regex: re.Pattern[str]) -> frozenset[str] | None:
    """Lower-cased texts of which every match of ``regex`` holds one; None if none is known."""
    tree = parse_tree(regex)
    return None if tree is None else _needs(tree)


def _needs(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """The best set of texts one of which every match of the sequence ``items`` holds."""
    options: list[frozenset[str]] = []
    run: list[str] = []
    for op, arg in items:
        if str(op) == "LITERAL" and arg < 128:
            run.append(chr(arg).lower())
            continue
        if run:
            options.append(frozenset(["".join(run)]))
            run = []
        found = _needs_of(str(op), arg)
        if found:
            options.append(found)
    if run:
        options.append(frozenset(["".join(run)]))
    # The set whose shortest text is longest: the rarest to hold by chance.
    return max(options, key=lambda texts: min(map(len, texts)), default=None)


def _needs_of(op: str, arg: Any) -> frozenset[str] | None:
    if op == "SUBPATTERN":
        return _needs(list(arg[3]))
    if op == "ATOMIC_GROUP":
        return _needs(list(arg))
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and arg[0] >= 1:
        return _needs(list(arg[2]))
    if op == "BRANCH":
        branches = [_needs(list(branch)) for branch in arg[1]]
        if any(not texts for texts in branches):
            return None
        return frozenset().union(*branches)  # type: ignore[arg-type]
    return None
