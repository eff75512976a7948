"""The ``interop`` marker holds exactly the tests that drive a part that is not ours, so that
``python -m pytest -m "not interop"`` (the fast lane, docs/testing.md) leaves out every one of
them and nothing else.

Each test module is read with ``ast``; what it drives shows in what it uses: the client
environments or the hosts' CLIs (``client_envs``, ``host_support``), a browser
(``playwright``, ``axe_support``), a PostgreSQL server of its own that it stops, kills or
stalls (``own_pg_server``, ``pg_proxy``'s links), the replay through the installed hook
(``process=True``). A module that uses one carries the marker (a test that uses one, where
the module's other tests do not, carries it itself), and a marker stands only where one is used.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imports_one_of(*modules: str) -> Callable[[ast.AST], bool]:
    def uses(node: ast.AST) -> bool:
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] in modules
        if isinstance(node, ast.Import):
            return any(alias.name.split(".")[0] in modules for alias in node.names)
        # the name given to pytest.importorskip
        return isinstance(node, ast.Constant) and str(node.value).split(".")[0] in modules

    return uses


def _names(*names: str) -> Callable[[ast.AST], bool]:
    def uses(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in names

    return uses


def _through_the_installed_hook(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and any(
        keyword.arg == "process" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        for keyword in node.keywords
    )


# what a test drives -> how its code shows it
DRIVES: dict[str, Callable[[ast.AST], bool]] = {
    "a client library or a host's CLI": _imports_one_of("client_envs", "host_support"),
    "a browser": _imports_one_of("playwright", "axe_support"),
    "a PostgreSQL server it stops, kills or stalls": _names(
        "own_pg_server", "commit_losing_proxy", "slow_link"
    ),
    "the replay through the installed hook": _through_the_installed_hook,
}


def _modules() -> list[Path]:
    """Every test module but this one, which names the signs and drives none of them."""
    return sorted(path for path in TESTS.glob("test_*.py") if path.name != Path(__file__).name)


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _is_interop_mark(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and ast.unparse(node) == "pytest.mark.interop"


def _module_marked(tree: ast.Module) -> bool:
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in statement.targets
        ):
            return any(_is_interop_mark(node) for node in ast.walk(statement.value))
    return False


def _tests(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for statement in tree.body:
        is_function = isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
        if is_function and statement.name.startswith("test"):
            yield statement


def _drives(nodes: list[ast.AST]) -> list[str]:
    return [what for what, shows in DRIVES.items() if any(shows(node) for node in nodes)]


def _outside_tests(tree: ast.Module) -> list[ast.AST]:
    """The module's nodes that are not inside a test function: imports, fixtures, helpers."""
    inside = {id(node) for test in _tests(tree) for node in ast.walk(test)}
    return [node for node in ast.walk(tree) if id(node) not in inside]


def _unmarked_and_wrongly_marked() -> tuple[list[str], list[str]]:
    unmarked: list[str] = []
    wrongly: list[str] = []
    for path in _modules():
        tree = _tree(path)
        module_drives = _drives(_outside_tests(tree))
        module_marked = _module_marked(tree)
        if module_drives and not module_marked:
            unmarked.append(f"{path.name} drives {', '.join(module_drives)}")
        if module_marked and not module_drives:
            wrongly.append(f"{path.name} carries the marker and drives nothing of the kind")
        for test in _tests(tree):
            test_drives = _drives(list(ast.walk(test)))
            test_marked = any(_is_interop_mark(node) for node in test.decorator_list)
            if test_drives and not (test_marked or module_marked):
                unmarked.append(f"{path.name}::{test.name} drives {', '.join(test_drives)}")
            if test_marked and not test_drives:
                wrongly.append(f"{path.name}::{test.name} carries the marker and drives nothing of the kind")
    return unmarked, wrongly


def test_every_test_that_drives_a_part_not_ours_carries_the_interop_marker() -> None:
    unmarked, _ = _unmarked_and_wrongly_marked()
    advice = "add `pytestmark = pytest.mark.interop` (or mark the test):\n"
    assert unmarked == [], advice + "\n".join(unmarked)


def test_the_interop_marker_stands_only_where_such_a_part_is_driven() -> None:
    _, wrongly = _unmarked_and_wrongly_marked()
    assert wrongly == [], "\n".join(wrongly)


def test_each_kind_of_part_is_found_in_some_test_so_the_check_is_not_empty() -> None:
    # A helper renamed would leave its sign matching nothing, and the checks above vacuous.
    found = {what for path in _modules() for what in _drives(list(ast.walk(_tree(path))))}
    assert set(DRIVES) - found == set()
