"""Every result a tool returns fits ``RESULT_MAX_BYTES``, whatever the store holds.

Each tool shows bounded summaries of what grows with history (evidence, actions, findings:
``evidence.py``), but a result can still repeat what one call stored at its input limits:
a 64 Ki-character specification or answer, a 1 Mi-character review response, in 4-byte
characters. The store and the resources keep such texts whole (``task://{task_id}``,
``escalation://{escalation_id}``, ``failure://{failure_id}``,
``task://{task_id}/feedback/{step}``); a result that would be larger than the bound shows
them clipped instead, longest first, so the short texts (ids, names, statuses) stay whole:

1. every text longer than a cap is clipped to it (head and tail, saying how much is left
   out), with caps halving from 2,048 characters to 256;
2. then every list is cut to its first items as well, from 20 down to one;
3. then the caps go on halving, down to 32 characters.

Each step starts from the result as stored, so a clip says how much the store holds.
A result within the bound is returned as it is (the common case costs one size check).
"""

from __future__ import annotations

from typing import Any

from .evidence import clip, json_bytes

# (characters a text keeps, items a list keeps; None: all), tried in this order.
STEPS: tuple[tuple[int, int | None], ...] = (
    (2048, None),
    (1024, None),
    (512, None),
    (256, None),
    (256, 20),
    (256, 10),
    (256, 5),
    (256, 2),
    (256, 1),
    (128, 1),
    (64, 1),
    (32, 1),
)


def fit(result: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """``result`` (a tool's result as JSON-like data) within ``max_bytes`` of compact JSON."""
    if json_bytes(result) <= max_bytes:
        return result
    fitted = result
    for cap, items in STEPS:
        fitted = _shortened(result, cap, items)
        if json_bytes(fitted) <= max_bytes:
            break
    return fitted


def _shortened(value: Any, cap: int, items: int | None) -> Any:
    if isinstance(value, str):
        return clip(value, cap) if len(value) > cap else value
    if isinstance(value, dict):
        return {key: _shortened(item, cap, items) for key, item in value.items()}
    if isinstance(value, list):
        return [_shortened(item, cap, items) for item in value[:items]]
    return value
