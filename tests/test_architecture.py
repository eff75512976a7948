"""Layer boundaries (docs/architecture.md): adapters -> services -> store, pure rules, no SQL above the store.

Every module's imports are read with ``ast``; a module that reaches the wrong way fails here.
The store alone knows tables, columns and how it encodes JSON: services speak in models and
values, and no module above the store names a ``*_json`` column.
"""

from __future__ import annotations

import ast
import functools
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import migrate_by_hand

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "mcp_server_escalation"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_data" not in p.parts)


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


@functools.cache
def _nodes(path: Path) -> list[ast.AST]:
    """Every node of a module's syntax tree: each module is read and parsed once for all checks."""
    return list(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def _nodes_of(path: Path, source: str | None) -> list[ast.AST]:
    return _nodes(path) if source is None else list(ast.walk(ast.parse(source)))


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Absolute names of everything the module imports (relative imports resolved)."""
    package = ["mcp_server_escalation", *path.relative_to(PACKAGE).parent.parts]
    found: set[str] = set()
    for node in _nodes_of(path, source):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


# layer -> prefixes it must never import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "rules": (
        "mcp",
        "aiosqlite",
        "anyio",
        # prompts.py reads the rules' words and the triggers' records; a rule names the book
        # it is handed by its protocol (rules/wording/book.py), so the two never import each other.
        "mcp_server_escalation.prompts",
        "mcp_server_escalation.store",
        "mcp_server_escalation.services",
        "mcp_server_escalation.adapters",
        "mcp_server_escalation.cli",
        "sqlite3",
    ),
    "models": (
        "mcp",
        "aiosqlite",
        "mcp_server_escalation.store",
        "mcp_server_escalation.services",
        "mcp_server_escalation.adapters",
        "mcp_server_escalation.cli",
    ),
    "store": (
        "mcp",
        "mcp_server_escalation.services",
        "mcp_server_escalation.adapters",
        "mcp_server_escalation.cli",
    ),
    "services": (
        "mcp",
        "aiosqlite",
        "sqlite3",
        # JSON is how the store encodes lists and objects in its columns; services pass models
        # and values (rendering facts as JSON for a reader is a pure rule's job).
        "json",
        "mcp_server_escalation.adapters",
        "mcp_server_escalation.cli",
    ),
    "adapters": ("aiosqlite", "sqlite3", "mcp_server_escalation.store", "mcp_server_escalation.cli"),
    "cli": ("aiosqlite", "sqlite3", "mcp_server_escalation.store"),
    # host hooks: an adapter that must not even load the SDK (it runs on every tool call)
    "hooks": ("mcp", "aiosqlite", "sqlite3", "mcp_server_escalation.store", "mcp_server_escalation.adapters"),
}


def _violations(path: Path, source: str | None = None) -> list[str]:
    banned = FORBIDDEN.get(_layer(path), ())
    return sorted(
        name for name in _imports(path, source) if any(name == b or name.startswith(b + ".") for b in banned)
    )


def _offenders(found: dict[str, list[str]]) -> str:
    """One line per offending module: its path in the package and what it does wrong."""
    return "\n".join(f"{module}: {', '.join(what)}" for module, what in sorted(found.items()))


def _each_module(check: Callable[[Path], list[str]], left_out: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """What ``check`` finds in each module of the package outside the layers ``left_out``."""
    modules = [path for path in _modules() if _layer(path) not in left_out]
    found = {str(path.relative_to(PACKAGE)): check(path) for path in modules}
    return {module: what for module, what in found.items() if what}


def test_every_module_imports_only_what_its_layer_may() -> None:
    offenders = _each_module(lambda path: [f"imports {name}" for name in _violations(path)])
    assert not offenders, "modules that reach the wrong way:\n" + _offenders(offenders)


def test_the_operator_cli_never_loads_the_mcp_sdk_outside_serve() -> None:
    for path in (PACKAGE / "cli").glob("*.py"):
        if path.name in ("serve.py", "demo.py"):  # both speak MCP: the server, the demo's client
            continue
        assert not any(n == "mcp" or n.startswith("mcp.") for n in _imports(path)), path


# What a hook run loads before it knows whether a relay answers it (launch.py imports these,
# and the rest of the package only once none did): the relay's client, the hosts' names and
# the daemon's start import the standard library and each other only, so that a relayed run
# costs next to nothing. The relay's server (relay_server.py, the words of hooks/outcome.py)
# runs in the process that answers, never here.
HOOK_FIRST_STOP = ("process.py", "locations.py", "hooks/hosts.py", "hooks/relay.py", "hooks/relay_spawn.py")


def _modules_imported(path: Path) -> set[str]:
    """The modules (not the names in them) a module imports as it loads, relative imports
    resolved: at its top level (not for the type checker, not in a function called later)."""
    package = ["mcp_server_escalation", *path.relative_to(PACKAGE).parent.parts]
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.add(".".join([*base, node.module] if node.module else base))
    return found


def test_a_hook_runs_first_stop_imports_the_standard_library_and_itself_alone() -> None:
    ours = {"mcp_server_escalation." + name.removesuffix(".py").replace("/", ".") for name in HOOK_FIRST_STOP}
    for name in HOOK_FIRST_STOP:
        imported = _modules_imported(PACKAGE / name)
        foreign = sorted(m for m in imported - ours if m.split(".")[0] not in sys.stdlib_module_names)
        assert not foreign, f"{name} imports {foreign}"


_SQL = re.compile(r"\b(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b")


def _sql(path: Path) -> list[str]:
    """The strings of a module that hold SQL, shortened to what shows it."""
    return [
        f"SQL {' '.join(node.value.split())[:60]!r}"
        for node in _nodes(path)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value)
    ]


def test_no_sql_outside_the_store() -> None:
    offenders = _each_module(_sql, left_out=("store",))
    assert not offenders, "modules above the store that hold SQL:\n" + _offenders(offenders)


def _json_columns() -> frozenset[str]:
    """Every ``*_json`` column of a store migrated to the latest version."""
    conn = sqlite3.connect(":memory:")
    try:
        migrate_by_hand(conn)
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return frozenset(
            column
            for table in tables
            for (column,) in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))
            if column.endswith("_json")
        )
    finally:
        conn.close()


JSON_COLUMNS = _json_columns()
_JSON_COLUMN = re.compile(r"\b(" + "|".join(sorted(JSON_COLUMNS)) + r")\b")
# Encoding a model for a column (``thresholds_json=model.model_dump_json()``) is the store's.
_ENCODERS = ("model_dump_json", "model_validate_json")


def _column_knowledge(path: Path, source: str | None = None) -> list[str]:
    """What in a module outside the store knows the store's JSON columns or encodes for them."""
    in_services = _layer(path) == "services"
    found: list[str] = []
    for node in _nodes_of(path, source):
        if isinstance(node, ast.keyword) and node.arg is not None and node.arg.endswith("_json"):
            found.append(f"keyword {node.arg}=")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.extend(f"string naming {m}" for m in _JSON_COLUMN.findall(node.value))
        elif in_services and isinstance(node, ast.Attribute) and node.attr in _ENCODERS:
            found.append(f"call of {node.attr}")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id.endswith("_store")
            and node.attr.startswith("_")
        ):
            # The store's private column setters (``_update(**columns)``) are the back door.
            found.append(f"private {node.value.id}.{node.attr}")
    return sorted(found)


def test_only_the_store_knows_its_json_columns() -> None:
    offenders = _each_module(_column_knowledge, left_out=("store",))
    assert not offenders, "modules above the store that know its JSON columns:\n" + _offenders(offenders)


def test_the_column_checker_itself_catches_a_column_outside_the_store() -> None:
    # Guard against a checker that silently passes everything (or knows no columns).
    assert {"triggers_json", "scope_json", "context_json"} <= JSON_COLUMNS
    service = PACKAGE / "services" / "x.py"
    assert _column_knowledge(service, "store.update(conn, 1, now, triggers_json=text)\n") == [
        "keyword triggers_json="
    ]
    assert _column_knowledge(service, "row = conn['scope_json']\n") == ["string naming scope_json"]
    assert _column_knowledge(service, "text = thresholds.model_dump_json()\n") == ["call of model_dump_json"]
    assert _column_knowledge(service, "task_store._update(conn, task_id, now, status=s)\n") == [
        "private task_store._update"
    ]
    assert _column_knowledge(service, "task_store.set_limits(conn, task_id, thresholds, scope, now)\n") == []
    assert _violations(service, "import json\n") == ["json"]


def test_the_checker_itself_catches_a_wrong_way_import() -> None:
    # Guard against a checker that silently passes everything.
    rule = PACKAGE / "rules" / "example.py"
    assert _violations(rule, "from ..store import tasks\n") == [
        "mcp_server_escalation.store",
        "mcp_server_escalation.store.tasks",
    ]
    assert _violations(rule, "import aiosqlite\n") == ["aiosqlite"]
    assert _violations(PACKAGE / "services" / "x.py", "from mcp.server import x\n") != []
    assert _violations(rule, "from ..models.tasks import Counters\n") == []


def test_no_model_facing_wording_in_the_tool_adapter() -> None:
    # Descriptions come from prompts/tools.toml; the adapter only carries types and limits.
    modules = sorted((PACKAGE / "adapters" / "mcp" / "tools").glob("*.py"))
    assert modules
    for module in modules:
        assert "description=" not in module.read_text(encoding="utf-8"), module.name


# Phrases that only prompt text contains: none of them may appear in Python code.
_PROMPT_PHRASES = (
    "You are",
    "Escalation Cycle",
    "RETRY HISTORY",
    "ESCALATION HISTORY",
    "REVIEW FINDINGS",
    "Do not repeat",
    "Continue working",
    "awaits a human",
)


def _prompt_wording(path: Path) -> list[str]:
    """The strings of a module, docstrings aside, that hold a phrase only prompt text has."""
    docstrings = {
        id(node.body[0].value)
        for node in _nodes(path)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    strings = [
        node.value
        for node in _nodes(path)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]
    return [f"wording {phrase!r}" for s in strings for phrase in _PROMPT_PHRASES if phrase in s]


def test_no_prompt_wording_in_python_code() -> None:
    offenders = _each_module(_prompt_wording)
    assert not offenders, "modules holding prompt wording (prompts/ holds it):\n" + _offenders(offenders)


def test_templates_have_no_default_wording() -> None:
    # Seed 000: no defaults in code for template fields; a missing one must fail at load.
    from mcp_server_escalation.prompts import TemplateFileModel, _TemplateEntry

    assert _TemplateEntry.model_fields["text"].is_required()
    assert TemplateFileModel.model_fields["version"].is_required()


def test_the_sql_and_wording_checkers_themselves_name_what_they_find(tmp_path: Path) -> None:
    # Guard against checkers that silently pass everything, and show what a failure reads as.
    module = tmp_path / "x.py"
    module.write_text('"""You are a docstring."""\nQUERY = "SELECT id FROM tasks"\nTEXT = "Do not repeat"\n')
    assert _sql(module) == ["SQL 'SELECT id FROM tasks'"]
    assert _prompt_wording(module) == ["wording 'Do not repeat'"]
    assert _offenders({"services/x.py": ["imports json", "imports sqlite3"], "cli/a.py": ["SQL 'x'"]}) == (
        "cli/a.py: SQL 'x'\nservices/x.py: imports json, imports sqlite3"
    )


# Most modules stay under ~300 lines (docs/architecture.md); past this a module holds more than one job.
MODULE_LINES_MAX = 500
# The few modules allowed past it, each with why. An allowance a module no longer needs fails
# below, so the list only ever shrinks.
LONG_MODULES: dict[str, str] = {
    "store/migrations.py": "the schema's SQL text frozen per migration: a shipped one is never edited",
    "store/postgres/migrations.py": "PostgreSQL's schema SQL frozen per migration, as SQLite's is",
    "cli/demo.py": "one story told in order (fail, escalate, answer, refuse, feedback) by three processes",
}


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _too_long(lines_by_module: dict[str, int]) -> str:
    """The modules past the limit and not allowed it, each with its length; empty when none."""
    over = sorted(
        (name, lines)
        for name, lines in lines_by_module.items()
        if lines > MODULE_LINES_MAX and name not in LONG_MODULES
    )
    return ", ".join(f"{name} ({lines} lines)" for name, lines in over)


def test_no_module_is_longer_than_500_lines_but_the_few_allowed_with_why() -> None:
    lines_by_module = {path.relative_to(PACKAGE).as_posix(): _line_count(path) for path in _modules()}
    too_long = _too_long(lines_by_module)
    assert not too_long, (
        f"modules over {MODULE_LINES_MAX} lines (part each by what it does, or allow it in "
        f"LONG_MODULES with why): {too_long}"
    )
    not_long = sorted(name for name in LONG_MODULES if lines_by_module.get(name, 0) <= MODULE_LINES_MAX)
    assert not not_long, f"allowed in LONG_MODULES but no longer over the limit: {', '.join(not_long)}"


def test_the_length_checker_itself_names_each_long_module_and_its_length() -> None:
    found = _too_long({"services/big.py": 709, "store/migrations.py": 900, "services/small.py": 120})
    assert found == "services/big.py (709 lines)"
