"""A threshold is declared once, in ``Thresholds``: the overrides a task or the config file
give are derived from it, field for field, with the same bounds and words.

The published schemas (``schemas/``) hold the overrides as they were written by hand before;
tests/test_schemas.py keeps them as they are.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mcp_server_escalation.models.thresholds import ThresholdOverrides, Thresholds


def _value_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without its default and title, and without the null an optional
    field adds."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    [branch] = branches
    kept = {k: v for k, v in branch.items() if k not in ("default", "title")}
    if "description" in prop:
        kept["description"] = prop["description"]
    return kept


def test_every_threshold_is_an_override_with_its_bounds_and_description_and_nothing_else() -> None:
    thresholds = Thresholds.model_json_schema()["properties"]
    overrides = ThresholdOverrides.model_json_schema()["properties"]

    assert list(overrides) == list(thresholds)
    for name, prop in overrides.items():
        assert prop["default"] is None, name
        assert _value_schema(prop) == _value_schema(thresholds[name]), name


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("same_error_repeated", 0),
        ("max_minutes", 10_000_001),
        ("stagnation_similarity", 0.0),
        ("warn_before", -1),
    ],
)
def test_an_override_refuses_what_the_threshold_refuses(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as threshold:
        Thresholds.model_validate({field: value})
    with pytest.raises(ValidationError) as override:
        ThresholdOverrides.model_validate({field: value})
    assert [e["loc"] for e in override.value.errors()] == [e["loc"] for e in threshold.value.errors()]


def test_unset_overrides_keep_the_defaults_and_set_ones_replace_them() -> None:
    merged = Thresholds().merged(ThresholdOverrides(same_error_repeated=2, max_tool_calls=40))
    assert merged == Thresholds(same_error_repeated=2, max_tool_calls=40)
    with pytest.raises(ValidationError, match="colour"):
        ThresholdOverrides.model_validate({"colour": 1})
