"""Output schemas of the tools: generated from the result models, published flattened.

Two costs decide this module. Generating eleven output schemas at start-up was a quarter
of the server's cold start beyond a minimal ``MCPServer``, so the schemas are generated
ahead of time into ``schemas/tools/*.output.json`` (a test fails when a checked-in file
differs from the models) and read at start-up. And a client validates every result against
the published schema: ``$ref`` chains and ``anyOf [X, null]`` made that validation cost as
much as our whole tool call, so the published schema is flattened (references inlined,
nullable unions folded into ``type`` lists). It accepts exactly the same documents.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_REF_PREFIX = "#/$defs/"


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
    """``anyOf: [{type: X, ...}, {type: null}]`` -> ``{type: [X, null], ...}``."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2:
        return node
    nulls = [o for o in options if o == {"type": "null"}]
    others = [o for o in options if o != {"type": "null"}]
    if len(nulls) != 1 or len(others) != 1:
        return node
    other = others[0]
    kind = other.get("type")
    if not isinstance(kind, str) or "anyOf" in other or "enum" in other or "const" in other:
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    return {**other, **merged, "type": [kind, "null"]}


def flat_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's serialization schema with every reference inlined."""
    schema = model.model_json_schema(mode="serialization")
    definitions = schema.pop("$defs", {})
    flat = _inline(schema, definitions)
    if not isinstance(flat, dict):
        raise TypeError(f"{model.__name__}: a tool's output schema must be an object")
    return flat
