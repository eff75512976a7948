"""The config defaults, taken unvalidated at start-up, are exactly what validation gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from mcp_server_escalation.errors import ConfigError
from mcp_server_escalation.models.hook_config import HooksConfig
from mcp_server_escalation.models.store_config import StoreConfig
from mcp_server_escalation.models.thresholds import ThresholdOverrides, Thresholds
from mcp_server_escalation.settings import (
    ConfigFile,
    ElicitationConfig,
    GuidanceConfig,
    NotifyConfig,
    Settings,
)

CONFIG_MODELS = [
    ConfigFile,
    NotifyConfig,
    ElicitationConfig,
    GuidanceConfig,
    HooksConfig,
    StoreConfig,
    Thresholds,
    ThresholdOverrides,
]


@pytest.mark.parametrize("model", CONFIG_MODELS, ids=lambda m: m.__name__)
def test_the_unvalidated_defaults_equal_the_validated_ones(model: type[BaseModel]) -> None:
    constructed = model.model_construct()
    validated = model.model_validate({})
    assert constructed == validated
    assert constructed.model_dump() == validated.model_dump()


def test_settings_without_a_config_file_have_the_validated_defaults(tmp_path: Path) -> None:
    settings = Settings.from_sources(db=str(tmp_path / "s.db"), env={})
    assert settings.thresholds == Thresholds.model_validate({})
    assert settings.hooks == HooksConfig.model_validate({})
    assert settings.notify == NotifyConfig.model_validate({})
    assert settings.guidance.k == 5
    assert settings.elicitation.mode == "auto"


def test_a_config_file_is_still_validated_whole(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[thresholds]\nsame_error_repeated = 4\n[hooks]\nattempts = ['command']\n", encoding="utf-8"
    )
    settings = Settings.from_sources(db=str(tmp_path / "s.db"), config=str(config), env={})
    assert settings.thresholds.same_error_repeated == 4
    assert settings.thresholds.files_modified_exceeds == 20
    assert settings.hooks.attempts == ["command"]
    config.write_text("[hooks]\nattempts = ['sometimes']\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="attempts"):
        Settings.from_sources(db=str(tmp_path / "s.db"), config=str(config), env={})


def test_the_store_table_bounds_waits_and_a_variable_overrides_it(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[store]\noperation_timeout_seconds = 6\nreaders = 2\n", encoding="utf-8")

    from_file = Settings.from_sources(db=str(tmp_path / "s.db"), config=str(config), env={})
    from_both = Settings.from_sources(
        db=str(tmp_path / "s.db"),
        config=str(config),
        env={"ESCALATION_STORE_OPERATION_TIMEOUT_SECONDS": "7"},
    )

    assert (from_file.store.operation_timeout_seconds, from_file.store.readers) == (6, 2)
    assert (from_both.store.operation_timeout_seconds, from_both.store.readers) == (7, 2)


def test_a_statement_timeout_beyond_the_operation_bound_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"statement_timeout_seconds .* must be less than operation"):
        Settings.from_sources(
            db=str(tmp_path / "s.db"), env={"ESCALATION_STORE_STATEMENT_TIMEOUT_SECONDS": "9"}
        )
