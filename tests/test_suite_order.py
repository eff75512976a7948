"""The order the workers take the test modules in (conftest ``START_FIRST``) names modules
that exist: a renamed module would silently go back to the end of the run."""

from __future__ import annotations

from pathlib import Path

from conftest import START_FIRST


def test_every_module_started_first_is_a_test_module_of_the_suite() -> None:
    here = Path(__file__).parent
    assert [name for name in START_FIRST if not (here / name).is_file()] == []
