"""``context_refs`` hold pointers only: ids, paths, spans; never content.

A pointer is a short single-line string or an integer, or a short list of those, under a
snake_case key. Anything longer or multi-line is content and belongs in the store's other
fields (message, attempted_action), not in a reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_KEYS = 32
MAX_ITEMS = 100
MAX_POINTER_CHARS = 512
# All pointers of one call together: 32 keys of 100 pointers of 512 characters were 1.6 Mi
# characters of "pointers", stored and shown with the failure.
MAX_TOTAL_CHARS = 16 * 1024


def pointers_by_kind(pointers: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """(kind, ref) pairs as the store keeps them: kind -> its refs, in the order given."""
    grouped: dict[str, list[str]] = {}
    for kind, ref in pointers:
        grouped.setdefault(kind, []).append(ref)
    return grouped


def pointer_problem(refs: dict[str, Any]) -> str | None:
    """Why ``refs`` is not a set of pointers, or None when it is."""
    if len(refs) > MAX_KEYS:
        return f"at most {MAX_KEYS} keys, got {len(refs)}"
    total = 0
    for key, value in refs.items():
        if not KEY.match(key):
            return f"key {key!r} must be snake_case (a-z, 0-9, _; at most 64 characters)"
        values = value if isinstance(value, list) else [value]
        if len(values) > MAX_ITEMS:
            return f"{key}: at most {MAX_ITEMS} pointers, got {len(values)}"
        for item in values:
            problem = _item_problem(key, item)
            if problem is not None:
                return problem
            total += len(item) if isinstance(item, str) else 0
    if total > MAX_TOTAL_CHARS:
        return f"the pointers hold {total:,} characters in all; the limit is {MAX_TOTAL_CHARS:,} characters"
    return None


def _item_problem(key: str, item: object) -> str | None:
    """Why one pointer under ``key`` is not a pointer, or None when it is."""
    if isinstance(item, bool) or not isinstance(item, str | int):
        kind = type(item).__name__
        return f"{key}: pointers are ids, paths or spans (strings or integers), got {kind}"
    if isinstance(item, str) and (len(item) > MAX_POINTER_CHARS or "\n" in item):
        return (
            f"{key}: a pointer is one line of at most {MAX_POINTER_CHARS} characters; "
            "put content in message or attempted_action instead"
        )
    return None
