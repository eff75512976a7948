"""Words, not keys, wherever a person or a model reads: every kind of escalation as the CLI
prints it, as the console shows it, and the messages the model was told about it.

A view that dumps the stored record shows its keys (``count_at_firing``,
``out_of_scope_paths``), Python's booleans (``True``) and reprs (``['web/auth/**']``,
``{}``). Each is looked for in the text a reader sees: the CLI's output, the console page's
text (not its markup), the model's messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from console_support import RunningConsole, console_in_thread, logged_in, run_async
from escalation_kinds import Raised, raise_every_kind
from operator_support import run_cli

BOOLEANS = re.compile(r"\b(True|False|None)\b")
REPRS = re.compile(r"""\[['"]|\{['"]|\{\}|\[\]|['"]\]|['"]\}""")
KINDS = (
    "repeated_error",
    "no_file_progress",
    "test_stall",
    "verification_limit",
    "file_limit",
    "scope_deviation",
    "external_blocker",
    "budget",
    "ask_human",
    "system_error",
)


def key_names(value: Any) -> set[str]:
    """Every key of the stored record with an underscore (a name no person would write)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            found |= {part for part in str(key).split(":") if "_" in part}
            found |= key_names(item)
    elif isinstance(value, list):
        for item in value:
            found |= key_names(item)
    return found


def problems(text: str, keys: set[str]) -> list[str]:
    """What a reader should not see in ``text``: keys, Python booleans, reprs."""
    found = [f"boolean {m}" for m in BOOLEANS.findall(text)]
    found += [f"repr {m}" for m in REPRS.findall(text)]
    words = set(re.findall(r"(?<![\w./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w./(-])", text))
    found += [f"key {key}" for key in sorted(words & keys)]
    return found


class Text(HTMLParser):
    """A page's text as a reader sees it (no markup, no script)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def page_text(page: str) -> str:
    reader = Text()
    reader.feed(page)
    return " ".join(" ".join(reader.parts).split())


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("words-home")


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-words")) as running:
        yield running


@pytest.fixture(scope="module")
def raised(console: RunningConsole) -> Raised:
    return run_async(lambda: raise_every_kind(console.db_path))


@pytest.fixture(scope="module")
def records(console: RunningConsole, raised: Raised, home: Path) -> dict[str, dict[str, Any]]:
    """Each escalation as stored (``escalations show --json``), by kind."""
    import json

    async def read() -> dict[str, dict[str, Any]]:
        found = {}
        for kind, escalation_id in raised.ids.items():
            _, out, _ = await run_cli(
                "--db", console.db_path, "escalations", "show", str(escalation_id), "--json", home=home
            )
            found[kind] = json.loads(out)
        return found

    return run_async(read)


def test_every_kind_was_raised(raised: Raised) -> None:
    assert sorted(raised.ids) == sorted(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_the_cli_shows_each_kind_in_words(
    kind: str, console: RunningConsole, raised: Raised, records: dict[str, dict[str, Any]], home: Path
) -> None:
    async def show() -> str:
        code, out, err = await run_cli(
            "--db", console.db_path, "escalations", "show", str(raised.ids[kind]), home=home
        )
        assert code == 0, err
        return out

    found = problems(run_async(show), key_names(records[kind]))
    assert found == [], found


def test_the_cli_lists_every_kind_in_words(
    console: RunningConsole, raised: Raised, records: dict[str, dict[str, Any]], home: Path
) -> None:
    keys = set().union(*(key_names(record) for record in records.values()))

    async def listed() -> str:
        code, out, err = await run_cli(
            "--db", console.db_path, "escalations", "list", "--status", "all", home=home
        )
        assert code == 0, err
        return out

    found = problems(run_async(listed), keys)
    assert found == [], found


@pytest.mark.parametrize("kind", KINDS)
def test_the_console_shows_each_kind_in_words(
    kind: str, console: RunningConsole, raised: Raised, records: dict[str, dict[str, Any]]
) -> None:
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{raised.ids[kind]}").text
    found = problems(page_text(page), key_names(records[kind]))
    assert found == [], found


def test_the_models_messages_have_no_python_reprs(raised: Raised) -> None:
    told = "\n".join(raised.told)
    assert "web/auth/**" in told  # the scope is named
    assert [p for p in problems(told, set()) if not p.startswith("key")] == []


def test_the_escalation_briefing_the_model_reads_has_no_json_or_python_reprs(
    console: RunningConsole, raised: Raised
) -> None:
    from conftest import connect

    async def briefings() -> list[str]:
        texts = []
        async with connect(console.db_path) as agent:
            for escalation_id in raised.ids.values():
                prompt = await agent.client.get_prompt(
                    "escalation_briefing", {"escalation_id": str(escalation_id)}
                )
                texts.append(prompt.messages[0].content.text)  # type: ignore[union-attr]
        return texts

    told = "\n".join(run_async(briefings))
    assert "Evidence:" in told
    assert [p for p in problems(told, set()) if not p.startswith("key")] == []


def test_the_briefing_says_what_is_absent_in_the_words_the_operators_pages_use(
    console: RunningConsole, raised: Raised
) -> None:
    from conftest import connect

    async def briefings() -> dict[str, str]:
        async with connect(console.db_path) as agent:
            told = {}
            for kind, escalation_id in raised.ids.items():
                prompt = await agent.client.get_prompt(
                    "escalation_briefing", {"escalation_id": str(escalation_id)}
                )
                told[kind] = prompt.messages[0].content.text  # type: ignore[union-attr]
            return told

    told = run_async(briefings)
    assert "\nScope: any path\n" in told["repeated_error"]
    assert "\nScope: web/auth/**\n" in told["scope_deviation"]
    assert "\nSpecification: (none)\n" in told["repeated_error"]
    assert "\n  attempted action: (none)\n" in told["external_blocker"]
    dashes = [line for text in told.values() for line in text.splitlines() if line.endswith((": -", " -"))]
    assert dashes == [], dashes


def test_a_budgets_summary_says_since_when_as_a_person_writes_a_time(
    records: dict[str, dict[str, Any]],
) -> None:
    summary = records["budget"]["triggers"][0]["summary"]
    assert re.search(r"since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC reached the budget of 2", summary), summary
