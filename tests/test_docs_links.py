"""The user's documents hold together: every relative link reaches a file (and a heading, when
it names one), the README stays a short page for users, and its two set-up commands are the
ones `.ci/run` runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")])
# A page a user reads from top to bottom; details belong in docs/. Two link lines of the
# operator's documents fit under it.
README_MAX_BYTES = 16_000

FENCED = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without code: links are not written inside code blocks or spans."""
    return INLINE_CODE.sub("", FENCED.sub("", text))


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(h) for h in HEADING.findall(FENCED.sub("", path.read_text(encoding="utf-8")))}


def _relative_links(path: Path) -> list[str]:
    links = LINK.findall(_prose(path.read_text(encoding="utf-8")))
    return [link for link in links if not re.match(r"^[a-z][a-z0-9+.-]*:", link)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_an_existing_file_and_heading(document: Path) -> None:
    broken = []
    for link in _relative_links(document):
        target, _, anchor = link.partition("#")
        path = (document.parent / target).resolve() if target else document
        if not path.exists():
            broken.append(f"{link}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"{document.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n[ok](#top) [gone](missing.md) [no heading](#nowhere) `[code](x.md)`\n")
    links = _relative_links(page)
    assert links == ["#top", "missing.md", "#nowhere"]
    assert "top" in _anchors(page)
    assert "nowhere" not in _anchors(page)


def test_headings_get_githubs_anchors() -> None:
    assert _anchor("The agent's loop") == "the-agents-loop"
    assert _anchor("Speed: the hook relay") == "speed-the-hook-relay"
    assert _anchor("`get_guidance` on 100,000 records") == "get_guidance-on-100000-records"


def test_the_readme_is_a_short_page_for_users() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move details to docs/"


def test_the_readme_set_up_commands_are_the_ones_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install . && mcp-server-escalation demo" in readme
    assert 'pip install ".[test]" && python -m pytest' in readme
    for line in ('pip install ".[test]"', "mcp-server-escalation demo", "python -m pytest"):
        assert f"\n{line}\n" in ci


def test_the_readme_has_the_sections_a_user_needs_in_order() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.*)$", readme, re.MULTILINE)
    wanted = [
        "Quick start",
        "Connect an agent",
        "The agent's loop",
        "Operator",
        "Configuration",
        "Troubleshooting",
    ]
    assert [s for s in sections if s in wanted] == wanted


def test_no_document_uses_words_a_reader_cannot_look_up() -> None:
    unknown = re.compile(r"\bSPEC\b|\bSC-\d{3}\b|\bFR-\d{3}\b|\bseed \d{3}\b")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in DOCUMENTS
        for match in unknown.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_readme_configuration_table_names_every_config_key() -> None:
    from mcp_server_escalation.settings import ConfigFile

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Configuration") : readme.index("## Troubleshooting")]
    keys = []
    for name, field in ConfigFile.model_fields.items():
        table_model = field.annotation
        if isinstance(table_model, type) and hasattr(table_model, "model_fields"):
            assert f"`[{name}] " in table, f"README, Configuration: no row of the [{name}] table"
            keys += list(table_model.model_fields)
        else:
            keys.append(name)
    missing = [key for key in keys if not re.search(rf"`(\[\w+\] )?{key}`", table)]
    assert not missing, f"config keys missing from README, Configuration: {missing}"
