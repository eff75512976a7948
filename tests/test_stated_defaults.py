"""The defaults the README and docs state are the ones the code has: every row of the README's
configuration table and of docs/triggers.md's thresholds table for a threshold or a hook
setting, the README's summary of the thresholds, and each "`key` (default N)" in the docs,
compared with ``Thresholds()`` and ``HooksConfig()``; and every row of docs/architecture.md's
table of bounds, compared with the constant it names. A changed default fails here until the
words follow it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mcp_server_escalation.hooks.install import TIMEOUT_SECONDS as INSTALLED_HOOK_SECONDS
from mcp_server_escalation.hooks.relay import ANSWER_TIMEOUT, HOOK_BUDGET_SECONDS, SERVED_HOOK_SECONDS
from mcp_server_escalation.models.hook_config import HooksConfig
from mcp_server_escalation.models.store_config import StoreConfig
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.store.db import BUSY_TIMEOUT_MS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
DEFAULTS: dict[str, dict[str, Any]] = {
    "thresholds": Thresholds().model_dump(),
    "hooks": HooksConfig().model_dump(),
}
# The README's one-line summary of the thresholds, each phrase and the threshold it states.
SUMMARY = {
    r"the same error (\d+) times in a row": "same_error_repeated",
    r"(\d+) verification attempts": "total_verification_attempts",
    r"(\d+) attempts without a\s+file change": "no_file_changes_after_attempts",
    r"(\d+) test runs without a better pass rate": "no_test_improvement_after",
    r"more than (\d+) files": "files_modified_exceeds",
}


def _stated(text: str) -> Any:
    """A default as a table states it, as a value: 3, 0.7, true, off, `main`, ["test_run"]."""
    text = text.strip().strip("`")
    words = {"true": True, "false": False, "off": None, "built-in": None, "[]": []}
    if text in words:
        return words[text]
    if re.fullmatch(r"\d+", text):
        return int(text)
    if re.fullmatch(r"\d+\.\d+", text):
        return float(text)
    if text.startswith("["):
        return re.findall(r'"([^"]+)"', text)
    return text


def _rows(page: Path) -> list[tuple[str, list[str], list[str]]]:
    """Each table row that sets a threshold or a hook setting: its table, its keys, and the
    defaults it states (one for all its keys, or one each). A README row without its
    ``[table]`` belongs to the table of the row above it. A table's header row (the one above
    its ``| --- |`` line) names columns, not a setting and its default (a sweep's table heads
    its first column with the key it varies)."""
    found = []
    table = "thresholds" if page.name == "triggers.md" else ""
    lines = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3:
            continue
        if number + 1 < len(lines) and re.match(r"^\|\s*:?-{3}", lines[number + 1]):
            continue
        named = re.match(r"`\[(\w+)\] ", cells[0])
        if named:
            table = named[1]
        elif cells[0].startswith("`--") or cells[0].startswith("`ESCALATION") or "XDG" in cells[0]:
            table = ""
        keys = re.findall(r"`(?:\[\w+\] )?([a-z_]+)`", cells[0])
        if table in DEFAULTS and keys and all(key in DEFAULTS[table] for key in keys):
            default = re.sub(r" \(.*\)$", "", cells[1])  # "8000 (500-9000)": the range aside
            stated = [default] if len(keys) == 1 else default.split(", ")
            found.append((table, keys, stated))
    return found


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "triggers.md"], ids=lambda path: path.name)
def test_every_default_a_table_states_is_the_codes_default(page: Path) -> None:
    rows = _rows(page)
    assert len(rows) >= 10, rows  # the tables were read, not skipped
    wrong = {}
    for table, keys, stated in rows:
        values = [_stated(text) for text in stated]
        if len(values) == 1 and len(keys) > 1:
            values = values * len(keys)  # "off" for three budgets
        for key, value in zip(keys, values, strict=True):
            if DEFAULTS[table][key] != value:
                wrong[f"[{table}] {key}"] = (value, DEFAULTS[table][key])
    assert wrong == {}, "stated default, the code's default"


def test_the_readmes_summary_of_the_thresholds_says_the_defaults() -> None:
    text = README.read_text(encoding="utf-8")
    (summary,) = re.findall(r"^- Thresholds: .*?(?=^- )", text, re.MULTILINE | re.DOTALL)
    stated = {}
    for phrase, key in SUMMARY.items():
        found = re.search(phrase.replace(" ", r"\s+"), summary)  # the README wraps its lines
        assert found, phrase
        stated[key] = int(found[1])
    assert stated == {key: DEFAULTS["thresholds"][key] for key in SUMMARY.values()}


def test_each_default_the_docs_name_in_passing_is_the_codes_default() -> None:
    said = []
    for page in [README, *DOCS]:
        text = page.read_text(encoding="utf-8")
        for key, value in re.findall(r"`(?:\[\w+\] )?([a-z_]+)` \(default ([\d.]+)\)", text):
            said.append((page.name, key, value))
    assert said  # the docs do name some
    for page_name, key, value in said:
        table = next(name for name, fields in DEFAULTS.items() if key in fields)
        assert DEFAULTS[table][key] == _stated(value), (page_name, key, value)


# The bounds table of docs/architecture.md: the constant (or setting) each row is "set by",
# and its value in the code, in seconds.
BOUNDS = {
    "BUSY_TIMEOUT_MS": BUSY_TIMEOUT_MS / 1000,
    "operation_timeout_seconds": StoreConfig().operation_timeout_seconds,
    "SERVED_HOOK_SECONDS": SERVED_HOOK_SECONDS,
    "ANSWER_TIMEOUT": ANSWER_TIMEOUT,
    "HOOK_BUDGET_SECONDS": HOOK_BUDGET_SECONDS,
    "TIMEOUT_SECONDS": INSTALLED_HOOK_SECONDS,
}


def _bounds_rows() -> list[list[str]]:
    """The cells of each row of the bounds table (its header and ``| --- |`` line left out)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    heading = r"^### Bounds: one deadline per call\n(.*?)(?=^#)"
    (section,) = re.findall(heading, text, re.MULTILINE | re.DOTALL)
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_the_bounds_table_states_each_bound_the_code_has() -> None:
    stated: dict[str, list[float]] = {}
    for call, within, set_by, _then in _bounds_rows():
        name = re.findall(r"`([A-Za-z_]+)`", set_by)[0]
        stated.setdefault(name, []).append(float(re.findall(r"\d+(?:\.\d+)?", within)[0]))
        assert call, set_by
    assert set(stated) == set(BOUNDS)  # every bound the code has, each in a row
    assert {name: set(values) for name, values in stated.items()} == {
        name: {value} for name, value in BOUNDS.items()
    }
