"""The largest request a tool's published input schema admits, in bytes of JSON.

The HTTP transport refuses a request body over a byte limit before anything parses it,
while the tools state their limits in characters (``maxLength``) and items (``maxItems``).
A byte limit picked apart from those refused valid calls: a 1 MiB artifact of non-ASCII
text, as a client that escapes it sends it, is several MiB on the wire. So the limit is
computed from the schemas themselves, and a call the schema accepts always fits.

Every character is costed at its worst JSON encoding: a code point beyond the BMP
written as an escaped surrogate pair, ``\\ud83d\\ude00`` (12 bytes). Properties a schema
does not declare are not counted: the tools ignore them, so they are no documented input.
"""

from __future__ import annotations

import re
from typing import Any

# One code point (what maxLength counts) at its longest JSON spelling: "\\uXXXX\\uXXXX".
JSON_BYTES_PER_CHAR = 12
# The longest JSON number or literal a schema's number, integer, boolean or null may take
# ("-1.7976931348623157e+308" is 24 characters).
SCALAR_BYTES = 32
# Quotes, comma and colon around one property or item.
SEPARATOR_BYTES = 4
# A pattern that is one character class repeated {m,n} times bounds the string to n.
_BOUNDED_PATTERN = re.compile(r"\^\[[^\]]*\]\{\d+,(\d+)\}\$")


class UnboundedSchemaError(ValueError):
    """A schema node admits values of any size, so no byte limit can admit them all."""


def largest_json_bytes(schema: dict[str, Any], where: str = "arguments") -> int:
    """Bytes of the largest JSON document ``schema`` accepts (declared properties only)."""
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return max(largest_json_bytes(option, where) for option in options)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return max(len(str(value)) for value in values) * JSON_BYTES_PER_CHAR + SEPARATOR_BYTES
    kinds = schema.get("type", "object")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return max(_largest_of_kind(schema, kind, where) for kind in kinds)


def _largest_of_kind(schema: dict[str, Any], kind: str, where: str) -> int:
    if kind == "string":
        return _string_chars(schema, where) * JSON_BYTES_PER_CHAR + SEPARATOR_BYTES
    if kind == "array":
        if "maxItems" not in schema:
            raise UnboundedSchemaError(f"{where}: a list without maxItems")
        item = largest_json_bytes(schema.get("items", {}), f"{where}[]")
        return int(schema["maxItems"]) * (item + SEPARATOR_BYTES) + SEPARATOR_BYTES
    if kind == "object":
        properties: dict[str, dict[str, Any]] = schema.get("properties", {})
        return SEPARATOR_BYTES + sum(
            len(name) * JSON_BYTES_PER_CHAR + SEPARATOR_BYTES + largest_json_bytes(value, f"{where}.{name}")
            for name, value in properties.items()
        )
    return SCALAR_BYTES


def _string_chars(schema: dict[str, Any], where: str) -> int:
    if "maxLength" in schema:
        return int(schema["maxLength"])
    bounded = _BOUNDED_PATTERN.fullmatch(str(schema.get("pattern", "")))
    if bounded:
        return int(bounded.group(1))
    raise UnboundedSchemaError(f"{where}: a string without maxLength")
