"""The tools' JSON Schemas as published: generated from the models, flattened.

Both directions are generated ahead of time into ``schemas/tools/`` (a test fails when a
checked-in file differs from the models) and read at start-up: generating them there was a
quarter of the server's cold start beyond a minimal ``MCPServer``.

Output schemas: a client validates every result against the published schema, and ``$ref``
chains and ``anyOf [X, null]`` made that validation cost as much as our whole tool call, so
references are inlined and nullable unions folded into ``type`` lists, enums included (a
null checked against ``anyOf`` fails its first branch first, and the SDK's validator builds
an error for it: a paused task's ``holding.response_type`` was most of the validation of
every paused result). What tells a reader nothing goes too, as from the input schemas (a
fifth of every ``tools/list`` was titles).

Input schemas are what the model reads, with the descriptions, on every turn of a session.
Some hosts do not resolve ``$ref``/``$defs``, so references are inlined here too; and what
tells the model nothing goes: pydantic's titles (the property name again, title case),
empty defaults (``null``, ``""``, ``[]``, ``{}``: an argument not required is optional
anyway), ``additionalProperties: true`` (the default), and length limits that an anchored
pattern already states (``^[...]{1,128}$``). Nullable unions are folded, enums included.

Either way the published schema accepts exactly the documents the model's own schema does.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel

_REF_PREFIX = "#/$defs/"
_NULL = {"type": "null"}
_VALUES = frozenset({"default", "enum", "const", "examples"})  # data, not schemas
_EMPTY: tuple[Any, ...] = (None, "", [], {})
# A pattern that is one character class repeated {m,n} times, anchored at both ends.
_BOUNDED_PATTERN = re.compile(r"\^\[[^\]]*\]\{(\d+),(\d+)\}\$")


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(definitions[node["$ref"].removeprefix(_REF_PREFIX)])
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **siblings}, definitions)
    flat = {key: _inline(value, definitions) for key, value in node.items()}
    return _fold_nullable(flat)


def _fold_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [{type: X, ...}, {type: null}]`` -> ``{type: [X, null], ...}``; a nullable
    enum folds too, ``null`` joining its values."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2:
        return node
    nulls = [o for o in options if o == _NULL]
    others = [o for o in options if o != _NULL]
    if len(nulls) != 1 or len(others) != 1:
        return node
    other = others[0]
    kind = other.get("type")
    if not isinstance(kind, str) or "anyOf" in other or "const" in other:
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    folded = {**other, **merged, "type": [kind, "null"]}
    if "enum" in other:
        folded["enum"] = [*other["enum"], None]
    return folded


def flat_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's serialization schema with every reference inlined, without noise."""
    schema = model.model_json_schema(mode="serialization")
    definitions = schema.pop("$defs", {})
    flat = _without_noise(_inline(schema, definitions))
    if not isinstance(flat, dict):
        raise TypeError(f"{model.__name__}: a tool's output schema must be an object")
    return flat


def _noise(node: dict[str, Any]) -> set[str]:
    """The keys of one schema node that tell the model nothing (module docstring)."""
    noise = {"title"} if isinstance(node.get("title"), str) else set()
    if "default" in node and any(node["default"] == empty for empty in _EMPTY):
        noise.add("default")
    if node.get("additionalProperties") is True:
        noise.add("additionalProperties")
    bounded = _BOUNDED_PATTERN.fullmatch(str(node.get("pattern", "")))
    if bounded and (node.get("minLength"), node.get("maxLength")) == tuple(map(int, bounded.groups())):
        noise.update({"minLength", "maxLength"})
    return noise


def _without_noise(node: Any) -> Any:
    """``node`` without what tells the model nothing, at every level (property names kept)."""
    if isinstance(node, list):
        return [_without_noise(item) for item in node]
    if not isinstance(node, dict):
        return node
    noise = _noise(node)
    kept: dict[str, Any] = {}
    for key, value in node.items():
        if key in noise:
            continue
        if key == "properties" and isinstance(value, dict):
            kept[key] = {name: _without_noise(field) for name, field in value.items()}
        elif key in _VALUES:
            kept[key] = value
        else:
            kept[key] = _without_noise(value)
    return kept


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's argument model as the model reads it: self-contained, nothing but meaning."""
    schema = model.model_json_schema(by_alias=True)
    definitions = schema.pop("$defs", {})
    flat = _without_noise(_inline(schema, definitions))
    if not isinstance(flat, dict):
        raise TypeError(f"{model.__name__}: a tool's input schema must be an object")
    return flat
