"""A JSON schema's check against its metaschema, done once per test process for each schema.

Before the SDK's client validates a tool's first result in a session, it checks the tool's
output schema against the JSON Schema metaschema (``check_schema``, ~15 ms a schema). The
tests open thousands of short sessions, and that check was about a third of an in-memory
test's CPU. The check of one schema always gives the same answer, so a schema that passed
is not checked again; one that fails is checked (and fails) every time, and every result
is still validated against its schema.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

_PASSED: set[str] = set()
_CHECK = Draft202012Validator.check_schema


def _check_once(cls: type[Draft202012Validator], schema: Any, *args: Any, **kwargs: Any) -> None:
    if args or kwargs:
        _CHECK.__func__(cls, schema, *args, **kwargs)  # type: ignore[attr-defined]
        return
    key = json.dumps(schema, sort_keys=True)
    if key not in _PASSED:
        _CHECK.__func__(cls, schema)  # type: ignore[attr-defined]
        _PASSED.add(key)


def check_each_schema_once() -> None:
    """From now on, in this process, the 2020-12 validator (the SDK's for a schema without
    ``$schema``, which is every tool's) checks each passing schema once."""
    Draft202012Validator.check_schema = classmethod(_check_once)  # type: ignore[assignment, method-assign]
