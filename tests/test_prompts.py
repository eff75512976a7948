"""Prompt templates are data, loaded strictly: a broken set fails at load, never silently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.errors import ConfigError
from mcp_server_escalation.prompts import ASKED_WAIT, TEMPLATES, PromptBook


@pytest.fixture
def prompts_copy(tmp_path: Path) -> Path:
    target = tmp_path / "prompts"
    shutil.copytree(data_dir("prompts"), target)
    return target


def _edit(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_packaged_prompts_cover_every_template_the_code_renders() -> None:
    book = PromptBook.load(data_dir("prompts"))
    assert set(book.versions()) == set(TEMPLATES)


def test_rendering_fills_the_placeholders() -> None:
    book = PromptBook.load(data_dir("prompts"))
    text = book.render("directive_pause_pending", task_id="t1", escalation_id=7, type="repeated_error")
    assert text == (
        "Escalation 7 (repeated error) awaits a human. Stop changing code for task t1 and call "
        "get_escalation(7, wait_seconds=4) until it is resolved."
    )


def test_the_wait_a_message_asks_for_is_the_operators_or_the_calls() -> None:
    book = PromptBook.load(data_dir("prompts"), wait_seconds=12)
    values = {"task_id": "t1", "escalation_id": 7, "type": "ask_human"}
    configured = book.render("directive_pause_pending", **values)
    token = ASKED_WAIT.set(3)  # what adapters/mcp/waits.py sets for a call of a connection
    try:
        for_the_call = book.render("directive_pause_pending", **values)
    finally:
        ASKED_WAIT.reset(token)

    assert "get_escalation(7, wait_seconds=12)" in configured
    assert "get_escalation(7, wait_seconds=3)" in for_the_call


def test_rendering_with_a_missing_value_is_an_error() -> None:
    book = PromptBook.load(data_dir("prompts"))
    with pytest.raises(ConfigError, match="expected"):
        book.render("directive_pause_unacknowledged", task_id="t1")


def test_a_filler_renders_like_render_and_is_bound_to_the_full_contract() -> None:
    book = PromptBook.load(data_dir("prompts"))
    values = {"attempts": "3, 7", "count": 2, "feedback": "E501 line too long", "guard": "ruff"}
    fill = book.filler("feedback_retry_entry", *values)
    assert fill(**values) == book.render("feedback_retry_entry", **values)
    with pytest.raises(ConfigError, match="expected"):
        book.filler("feedback_retry_entry", "attempts", "count", "feedback")


def test_a_missing_template_fails_at_load(prompts_copy: Path) -> None:
    _edit(prompts_copy, "directives.toml", "[templates.directive_stop_completed]", "[templates_unused]")
    with pytest.raises(ConfigError):
        PromptBook.load(prompts_copy)


def test_an_unknown_placeholder_fails_at_load(prompts_copy: Path) -> None:
    _edit(prompts_copy, "directives.toml", "stop all work on it", "stop {whatever}")
    with pytest.raises(ConfigError, match="unknown placeholder"):
        PromptBook.load(prompts_copy)


def test_an_unknown_template_fails_at_load(prompts_copy: Path) -> None:
    (prompts_copy / "extra.toml").write_text(
        'version = 1\n[templates.no_such_template]\ntext = "x"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="unknown template"):
        PromptBook.load(prompts_copy)


def test_an_unknown_field_fails_at_load(prompts_copy: Path) -> None:
    _edit(prompts_copy, "directives.toml", "version = 1", "version = 1\nauthor = 'me'")
    with pytest.raises(ConfigError):
        PromptBook.load(prompts_copy)


def test_attribute_access_in_a_placeholder_is_refused(prompts_copy: Path) -> None:
    _edit(prompts_copy, "directives.toml", "{task_id} is {status}", "{task_id.__class__} is {status}")
    with pytest.raises(ConfigError, match="plain name"):
        PromptBook.load(prompts_copy)


def test_a_user_prompt_folder_changes_what_the_model_reads(prompts_copy: Path) -> None:
    _edit(prompts_copy, "directives.toml", "Continue working on task {task_id}.", "Go on with {task_id}.")
    book = PromptBook.load(prompts_copy)
    assert book.render("directive_proceed", task_id="t9") == "Go on with t9."


def test_the_server_refuses_to_start_with_a_broken_prompt_folder(prompts_copy: Path) -> None:
    from mcp_server_escalation.adapters.composition.server import build_server
    from mcp_server_escalation.settings import Settings

    (prompts_copy / "escalations.toml").unlink()
    with pytest.raises(ConfigError, match="missing template"):
        build_server(Settings(prompts_dir=prompts_copy))


def test_every_tool_and_argument_the_model_sees_is_described_from_prompts() -> None:
    import tomllib

    from mcp_server_escalation.adapters.composition.server import build_server
    from mcp_server_escalation.adapters.mcp.schemas import generate
    from mcp_server_escalation.settings import Settings

    loaded = tomllib.loads((data_dir("prompts") / "tools.toml").read_text(encoding="utf-8"))
    texts = loaded["tools"]
    build_server(Settings())  # describes strictly, or raises
    import json

    for name, content in generate().items():
        if not name.endswith(".input.json"):
            continue
        tool = name.removeprefix("tools/").removesuffix(".input.json")
        properties = json.loads(content)["properties"]
        expected = dict(texts[tool]["arguments"].items())
        assert {arg: p.get("description", "") for arg, p in properties.items()} == expected


def test_a_tool_argument_left_out_of_the_descriptions_stops_the_server(prompts_copy: Path) -> None:
    from mcp_server_escalation.adapters.composition.server import build_server
    from mcp_server_escalation.settings import Settings

    # An empty text ("") is a choice to show no description; a missing entry is a mistake.
    _edit(prompts_copy, "tools.toml", 'limit = ""\n', "")
    with pytest.raises(ConfigError, match="without a description"):
        build_server(Settings(prompts_dir=prompts_copy))


def test_a_description_of_an_unknown_tool_stops_the_server(prompts_copy: Path) -> None:
    from mcp_server_escalation.adapters.composition.server import build_server
    from mcp_server_escalation.settings import Settings

    with (prompts_copy / "tools.toml").open("a", encoding="utf-8") as f:
        f.write('\n[tools.delete_everything]\ndescription = "x"\n')
    with pytest.raises(ConfigError, match="unknown tool"):
        build_server(Settings(prompts_dir=prompts_copy))


def test_the_config_file_can_point_at_a_prompt_folder(prompts_copy: Path, tmp_path: Path) -> None:
    from mcp_server_escalation.settings import Settings

    _edit(prompts_copy, "directives.toml", "Continue working on task {task_id}.", "Onward, {task_id}.")
    config = tmp_path / "config.toml"
    config.write_text(f'prompts_dir = "{prompts_copy}"\n', encoding="utf-8")
    settings = Settings.from_sources(config=str(config))
    assert settings.prompts_dir == prompts_copy
    assert PromptBook.load(settings.prompts_dir).render("directive_proceed", task_id="t") == "Onward, t."
