"""The server as the client packages people use see it, with their default settings.

Each client runs in an environment of its own (tests/client_envs.py: pinned releases from
PyPI, installed once into a cache folder) and drives the installed console script over stdio
through its own session objects, as its tool wrappers do; no model is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client_envs import drive
from operator_support import SCRIPT


def _nodes(schema: Any) -> list[dict[str, Any]]:
    """Every schema object inside ``schema``, itself included."""
    if isinstance(schema, list):
        return [node for item in schema for node in _nodes(item)]
    if not isinstance(schema, dict):
        return []
    return [schema, *(node for value in schema.values() for node in _nodes(value))]


def test_every_input_schema_converts_to_openai_strict_mode(tmp_path: Path) -> None:
    converted = drive("openai-agents", "strict_schemas.py", str(SCRIPT), str(tmp_path / "strict.db"))

    assert len(converted) == 16
    assert [name for name, tool in converted.items() if not tool["strict"]] == []
    for name, tool in converted.items():
        nodes = _nodes(tool["schema"])
        assert not [node for node in nodes if "$ref" in node or "$defs" in node], name
        objects = [node for node in nodes if "object" in (node.get("type") or [])]
        # No object open to any key: each says which keys it takes, and only those.
        assert all(node.get("additionalProperties") is False for node in objects), name
        assert all(node.get("properties") for node in objects), name
