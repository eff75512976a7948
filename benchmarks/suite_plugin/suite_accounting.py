"""The pytest plugin of ``benchmarks/measure_suite.py``: per test, its wall time, the CPU of
this worker and of its finished children, and the CPU of the SDK client's output-schema
checks (which a test pays once per tool and client session).
Written to ``$SUITE_ACCOUNTING/<pid>.json`` when the worker's session ends."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import Draft202012Validator

_tests: list[tuple[str, float, float, float, float]] = []
_schema = {"cpu": 0.0, "checks": 0}
_check_schema = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]


def _timed_check_schema(cls: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
    started = time.process_time()
    try:
        _check_schema(cls, schema, *args, **kwargs)
    finally:
        _schema["cpu"] += time.process_time() - started
        _schema["checks"] += 1


# Counting, not changing: the check runs exactly as before, timed.
Draft202012Validator.check_schema = classmethod(_timed_check_schema)  # type: ignore[method-assign,assignment]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    own, children, started = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
    schema = _schema["cpu"]
    yield
    _tests.append(
        (
            item.nodeid,
            time.perf_counter() - started,
            _cpu(resource.RUSAGE_SELF) - own,
            _cpu(resource.RUSAGE_CHILDREN) - children,
            _schema["cpu"] - schema,
        )
    )


def pytest_sessionfinish() -> None:
    folder = os.environ.get("SUITE_ACCOUNTING")
    if folder:
        report = {"tests": _tests, "schema_cpu": _schema["cpu"], "schema_checks": _schema["checks"]}
        (Path(folder) / f"{os.getpid()}.json").write_text(json.dumps(report))
