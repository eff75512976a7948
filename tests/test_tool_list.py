"""What the model is shown of the tools: small, self-contained, and still complete.

Every tool's name, description and input schema enter the model's context on every turn
of the session. Hosts differ in what they resolve, so no input schema may use ``$ref`` or
``$defs``; and the whole list stays under 3,800 tokens. Tokens are estimated as the
characters of the list as JSON (``json.dumps`` with its default separators) divided by
four: the same measure gave the ~5,900 tokens that issue 14 reported, and no tokenizer is
needed (``benchmarks/bench_tool_list.py`` prints it per tool, over stdio).
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest
from mcp import Client, types
from pydantic import ValidationError

from conftest import make_settings
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.adapters.mcp.tools import build_tools
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.settings import Settings

TOKEN_LIMIT = 3800


def shown_to_the_model(tools: list[types.Tool]) -> str:
    """The tool list as a host hands it to the model: name, description, input schema."""
    return json.dumps(
        [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools]
    )


def approx_tokens(text: str) -> int:
    """Characters / 4, rounded up (see the module docstring)."""
    return math.ceil(len(text) / 4)


async def _listed(db_path: str) -> list[types.Tool]:
    async with Client(build_server(make_settings(db_path)), mode="legacy") as client:  # type: ignore[arg-type]
        return (await client.list_tools()).tools


def _keys(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(_keys(item) for item in node)) if node else set()
    if isinstance(node, dict):
        return set(node).union(*(_keys(value) for value in node.values()))
    return set()


async def test_no_tools_input_schema_uses_references(db_path: str) -> None:
    tools = await _listed(db_path)

    assert len(tools) == 16
    for tool in tools:
        keys = _keys(tool.input_schema)
        assert "$ref" not in keys, tool.name
        assert "$defs" not in keys, tool.name
        assert "definitions" not in keys, tool.name


async def test_what_the_model_is_shown_of_the_tool_list_stays_under_3800_tokens(db_path: str) -> None:
    tokens = approx_tokens(shown_to_the_model(await _listed(db_path)))

    assert tokens < TOKEN_LIMIT, f"the tool list is ~{tokens} tokens"


async def test_every_tool_and_every_argument_a_model_may_need_to_explain_is_described(db_path: str) -> None:
    tools = {t.name: t for t in await _listed(db_path)}

    for tool in tools.values():
        assert tool.description, tool.name
    # The arguments whose meaning or unit their name and type do not carry.
    explained = {
        "start_task": ["scope", "baseline_pass_rate", "thresholds", "agent_id", "task_id"],
        "record_failure": ["message", "signal_type", "context_refs", "details"],
        "report_progress": ["files_modified", "outcome"],
        "get_escalation": ["wait_seconds"],
        "get_feedback": ["max_chars"],
        "record_attempt": ["upstream", "artifact"],
        "resolve_escalation": ["new_file_limit", "add_scope"],
        "update_failure": ["superseded_by", "outcome"],
    }
    for name, arguments in explained.items():
        properties = tools[name].input_schema["properties"]
        for argument in arguments:
            assert properties[argument].get("description"), (name, argument)


STRUCTURED = [
    ("start_task", {"title": "t", "thresholds": {"same_error_repeated": 5, "stagnation_similarity": 0.5}}),
    ("start_task", {"title": "t", "thresholds": None, "task_id": None, "baseline_pass_rate": 0.25}),
    (
        "record_failure",
        {"task_id": "t", "message": "m", "details": {"dependency": "pad", "status_code": 404}},
    ),
    ("record_failure", {"task_id": "t", "message": "m", "severity": None, "signal_type": "timeout"}),
    ("start_task", {"title": "t", "thresholds": {"same_error_repeated": 0}}),
    ("start_task", {"title": "t", "thresholds": {"no_such_threshold": 3}}),
    ("start_task", {"title": "t", "baseline_pass_rate": 1.5}),
    ("record_failure", {"task_id": "t", "message": "m", "details": {"status_code": "teapot"}}),
    ("record_failure", {"task_id": "t", "message": "m", "details": {"colour": "red"}}),
    ("record_failure", {"task_id": "t", "message": "m", "severity": "urgent"}),
    ("record_failure", {"task_id": "bad id!", "message": "m"}),
]


@pytest.mark.parametrize(("tool", "arguments"), STRUCTURED)
async def test_the_inlined_schema_accepts_exactly_what_the_tool_accepts(
    db_path: str, tool: str, arguments: dict[str, Any]
) -> None:
    schema = {t.name: t for t in await _listed(db_path)}[tool].input_schema
    metadata = {t.name: t for t in build_tools(Settings(), PromptBook.load(data_dir("prompts")))}[tool]

    try:
        metadata.fn_metadata.validate_arguments(arguments)
        accepted = True
    except ValidationError:
        accepted = False
    assert jsonschema.Draft202012Validator(schema).is_valid(arguments) is accepted
