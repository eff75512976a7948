"""A schema checked once per process (``schema_checks.py``) is still checked, and results still validated."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator, SchemaError, ValidationError
from jsonschema.validators import validator_for

BROKEN = {"type": "object", "properties": {"n": {"type": "no-such-type"}}}
SOUND = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_the_sdk_gets_the_validator_whose_check_is_kept() -> None:
    assert validator_for(SOUND) is Draft202012Validator


def test_a_broken_schema_fails_its_check_every_time() -> None:
    for _ in range(2):
        with pytest.raises(SchemaError):
            Draft202012Validator.check_schema(BROKEN)


def test_a_sound_schema_passes_and_results_are_still_validated_against_it() -> None:
    for _ in range(2):
        Draft202012Validator.check_schema(SOUND)
    validator = Draft202012Validator(SOUND)
    validator.validate({"n": 1})
    with pytest.raises(ValidationError):
        validator.validate({"n": "one"})
