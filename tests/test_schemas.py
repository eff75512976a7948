"""The checked-in schemas are exactly what the models generate (they cannot drift)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from conftest import connect
from mcp_server_escalation.adapters.mcp.schemas import generate
from mcp_server_escalation.adapters.mcp.tools import build_tools
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.settings import Settings

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


def test_checked_in_schemas_match_the_models() -> None:
    generated = generate()
    ours = [p for p in SCHEMAS.rglob("*.json") if p.parent.name != "external"]  # others' schemas
    on_disk = {str(p.relative_to(SCHEMAS)): p.read_text(encoding="utf-8") for p in ours}
    stale = sorted(name for name in generated if on_disk.get(name) != generated[name])
    extra = sorted(set(on_disk) - set(generated))
    hint = "run: python -m mcp_server_escalation.adapters.mcp.schemas schemas"
    assert (stale, extra) == ([], []), hint


def test_every_prompt_file_validates_against_the_prompts_schema() -> None:
    schema = json.loads((SCHEMAS / "prompts.schema.json").read_text(encoding="utf-8"))
    for path in PROMPTS.glob("*.toml"):
        jsonschema.validate(tomllib.loads(path.read_text(encoding="utf-8")), schema)


def test_the_readme_config_example_validates_against_the_config_schema() -> None:
    schema = json.loads((SCHEMAS / "config.schema.json").read_text(encoding="utf-8"))
    example = tomllib.loads(
        "[thresholds]\nsame_error_repeated = 4\nfiles_modified_exceeds = 40\n"
        "[notify]\nrenotify_minutes = 30\n[guidance]\nk = 5\n"
    )
    jsonschema.validate(example, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"thresholds": {"same_error_repeated": 0}}, schema)


def test_every_tool_has_an_output_schema() -> None:
    outputs = {n for n in generate() if n.endswith(".output.json")}
    assert len(outputs) == 16
    for name in outputs:
        assert json.loads((SCHEMAS / name).read_text(encoding="utf-8"))["type"] == "object"


def _nullable_unions(node: object) -> list[object]:
    if isinstance(node, list):
        return [found for item in node for found in _nullable_unions(item)]
    if not isinstance(node, dict):
        return []
    here = [node] if {"type": "null"} in node.get("anyOf", []) else []
    return here + [found for value in node.values() for found in _nullable_unions(value)]


def test_every_nullable_field_of_a_result_is_one_type_list_a_null_passes_at_once() -> None:
    # Against anyOf [X, null] a client's validator tries X first and builds an error for
    # every null (a paused task's holding.response_type was most of validating its result).
    for name, text in generate().items():
        if name.endswith(".output.json"):
            assert _nullable_unions(json.loads(text)) == [], name


def test_feedback_id_lists_state_their_item_type_in_words_only() -> None:
    # A client validates every typed item of structuredContent (~5 us each with the SDK's
    # jsonschema); a long step's ids would cost more than a no-op call. See models/feedback.py.
    schema = json.loads((SCHEMAS / "tools" / "get_feedback.output.json").read_text(encoding="utf-8"))
    lists = {name: field for name, field in schema["properties"].items() if field.get("type") == "array"}
    assert set(lists) == {
        "escalation_history",
        "retry_history",
        "review_findings",
        "human_responses",
        "guidance",
    }
    for name, field in lists.items():
        assert "items" not in field, name
        assert field["description"].endswith(("(each an integer)", "(each a string)")), name


def test_a_tools_argument_model_is_built_at_its_first_call_only() -> None:
    # Cold start: serving builds no argument model; the published schemas describe them.
    tools = {t.name: t for t in build_tools(Settings(), PromptBook.load(data_dir("prompts")))}
    assert {t.fn_metadata.arg_model.__name__ for t in tools.values()} == {"_NotBuiltYet"}
    # The first call builds its model, and a list sent as a JSON string is still unpacked.
    validated = tools["check_edit"].fn_metadata.validate_arguments({"task_id": "t-1", "paths": '["a.py"]'})
    assert validated == {"task_id": "t-1", "paths": ["a.py"]}
    assert tools["check_edit"].fn_metadata.arg_model.__name__ == "check_editArguments"
    assert tools["record_failure"].fn_metadata.arg_model.__name__ == "_NotBuiltYet"
    with pytest.raises(ValidationError, match="task_id"):
        tools["record_failure"].fn_metadata.validate_arguments({"task_id": "bad id!", "message": "m"})


async def test_the_output_schemas_every_server_shares_stay_as_published(tmp_path: Path) -> None:
    # Read once per process and shared by every server built: a server that wrote into one
    # (describing it, listing it) would change what every later server publishes.
    async with connect(str(tmp_path / "escalations.db"), role="operator") as agent:
        listed = {tool.name: tool.output_schema for tool in (await agent.client.list_tools()).tools}
    shared = {
        tool.name: tool.output_schema
        for tool in build_tools(Settings(db_path="x.db"), PromptBook.load(PROMPTS))
    }
    for name, schema in shared.items():
        published = json.loads((SCHEMAS / "tools" / f"{name}.output.json").read_text(encoding="utf-8"))
        assert schema == published == listed[name], name
