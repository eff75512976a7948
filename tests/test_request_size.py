"""The byte size of the largest call a schema admits (rules/bounds/request_size.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_server_escalation.rules.bounds.request_size import UnboundedSchemaError, largest_json_bytes

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "pattern": "^[A-Za-z0-9._:/@-]{1,128}$"},
        "note": {"type": ["string", "null"], "maxLength": 300},
        "paths": {"type": "array", "maxItems": 7, "items": {"type": "string", "maxLength": 40}},
        "outcome": {"enum": ["success", "failure"]},
        "count": {"type": "integer"},
        "details": {"anyOf": [{"type": "object", "properties": {"v": {"type": "string", "maxLength": 9}}}]},
    },
}


def _largest_instance(escaped: str) -> dict[str, Any]:
    return {
        "task_id": "a" * 128,
        "note": escaped * 300,
        "paths": [escaped * 40] * 7,
        "outcome": "failure",
        "count": -1.7976931348623157e308,
        "details": {"v": escaped * 9},
    }


@pytest.mark.parametrize("char", ["\N{GRINNING FACE}", "\x01", "\u00e9", "a"])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_the_largest_valid_document_in_any_encoding_fits_the_computed_size(
    char: str, ensure_ascii: bool
) -> None:
    document = json.dumps(_largest_instance(char), ensure_ascii=ensure_ascii).encode()

    assert len(document) <= largest_json_bytes(SCHEMA)


def test_a_string_without_a_length_limit_is_named_as_unbounded() -> None:
    schema = {"type": "object", "properties": {"details": {"properties": {"endpoint": {"type": "string"}}}}}

    with pytest.raises(
        UnboundedSchemaError, match=r"arguments\.details\.endpoint: a string without maxLength"
    ):
        largest_json_bytes(schema)


def test_a_list_without_an_item_limit_is_named_as_unbounded() -> None:
    with pytest.raises(UnboundedSchemaError, match=r"arguments\.paths: a list without maxItems"):
        largest_json_bytes({"properties": {"paths": {"type": "array", "items": {"type": "integer"}}}})
