"""Path normalisation and scope globs."""

from __future__ import annotations

import pytest

from mcp_server_escalation.rules.decide.paths import in_scope, normalise_path

ROOT = "/work/project"


@pytest.mark.parametrize(
    ("given", "path", "inside"),
    [
        ("src/a.py", "src/a.py", True),
        ("./src/./a.py", "src/a.py", True),
        ("src/x/../a.py", "src/a.py", True),
        ("/work/project/src/a.py", "src/a.py", True),
        ("src\\win\\a.py", "src/win/a.py", True),
        ("../other/a.py", "/work/other/a.py", False),
        ("src/../../escape.py", "/work/escape.py", False),
        ("/etc/passwd", "/etc/passwd", False),
        ("/work/projectile/a.py", "/work/projectile/a.py", False),
    ],
)
def test_paths_are_normalised_relative_to_the_root(given: str, path: str, inside: bool) -> None:
    normalised = normalise_path(given, ROOT)
    assert (normalised.path, normalised.inside_root) == (path, inside)


@pytest.mark.parametrize(
    ("path", "scope", "expected"),
    [
        ("src/auth/login.py", [], True),
        ("src/auth/login.py", ["src/auth"], True),
        ("src/auth/login.py", ["src/auth/"], True),
        ("src/auth/deep/x.py", ["src/auth/**"], True),
        ("src/payment/pay.py", ["src/auth/**"], False),
        ("src/a.py", ["src/*.py"], True),
        ("src/sub/a.py", ["src/*.py"], False),
        ("src/sub/a.py", ["src/**/*.py"], True),
        ("src/a.py", ["src/**/*.py"], True),
        ("tests/test_a.py", ["src/**", "tests/test_?.py"], True),
        ("tests/test_ab.py", ["tests/test_?.py"], False),
        ("docs/a.md", ["docs/[ab].md"], True),
        ("docs/c.md", ["docs/[!ab].md"], True),
        ("src/authx/a.py", ["src/auth"], False),
    ],
)
def test_scope_globs(path: str, scope: list[str], expected: bool) -> None:
    assert in_scope(normalise_path(path, ROOT), scope) is expected


def test_a_path_outside_the_root_is_never_in_scope_even_with_an_empty_scope() -> None:
    assert not in_scope(normalise_path("../x.py", ROOT), [])
    assert not in_scope(normalise_path("/etc/hosts", ROOT), ["**"])
