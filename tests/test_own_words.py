"""Comments say why in the project's own words: none cites a document outside the repository.

A reader of this repository cannot open the product contract's section numbers, its success
criteria or the design notes it was written from, so a comment or docstring that leans on
them ("SPEC 8", "seed 000", "SC-006") explains nothing. Files inside the repository (docs/,
benchmarks/README.md) may be cited; the documents under docs/ are checked by
tests/test_docs_links.py.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("server", "benchmarks", "scripts", "tests")
OUTSIDE = re.compile(
    r"\bSPEC\b|\bseed \d{3}\b|shared/reference|\.\./shared|host-hooks\.md|STYLE\.md"
    r"|\bSC-\d{3}\b|\bFR-\d{3}\b"
)
SKIPPED = {
    # This module names the citations it looks for.
    "tests/test_own_words.py",
}


def _comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """Every comment and docstring of a module, with the line it starts on."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                found.append((node.body[0].lineno, docstring))
    return found


def _citations(path: Path) -> list[str]:
    relative = path.relative_to(ROOT).as_posix()
    source = path.read_text(encoding="utf-8")
    if OUTSIDE.search(source) is None:
        return []  # no citation anywhere in the file, so none in a comment: nothing to parse
    return [
        f"{relative}:{line}: {match.group(0)}"
        for line, text in _comments_and_docstrings(source)
        for match in OUTSIDE.finditer(text)
    ]


def test_no_comment_or_docstring_cites_a_document_outside_the_repository() -> None:
    modules = [p for folder in SOURCES for p in sorted((ROOT / folder).rglob("*.py"))]
    found = [c for p in modules if p.relative_to(ROOT).as_posix() not in SKIPPED for c in _citations(p)]
    assert not found, "\n".join(found)


def test_no_prompt_file_comment_cites_a_document_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{number}: {match.group(0)}"
        for path in sorted((ROOT / "prompts").glob("*.toml"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if line.lstrip().startswith("#")
        for match in OUTSIDE.finditer(line)
    ]
    assert not found, "\n".join(found)


def test_the_check_finds_a_citation_in_a_comment_and_in_a_docstring() -> None:
    source = '"""Cold start (SPEC 8)."""\n\n# as seed 004 asks\nSPECIFICATION = "SPEC 8 in a value"\n'
    cited = [m for _, text in _comments_and_docstrings(source) for m in OUTSIDE.findall(text)]
    assert sorted(cited) == ["SPEC", "seed 004"]
