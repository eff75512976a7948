"""axe-core (the accessibility engine, from npm) for the browser tests: installed once into a
cache folder with npm, read from there afterwards, and run in a page of Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

AXE_VERSION = "4.10.3"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-server-escalation-tests"
# The impacts a page must have none of.
BLOCKING = ("serious", "critical")
RUN = """async (blocking) => {
  const found = await axe.run(document, {resultTypes: ["violations"]});
  return found.violations
    .filter((v) => blocking.includes(v.impact))
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}"""


def axe_source() -> str:
    """axe.min.js of ``AXE_VERSION`` (``AXE_CORE_JS`` names another copy)."""
    given = os.environ.get("AXE_CORE_JS")
    if given:
        return Path(given).read_text(encoding="utf-8")
    folder = CACHE / f"axe-core-{AXE_VERSION}"
    script = folder / "node_modules" / "axe-core" / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is needed once to install axe-core for the accessibility check")
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                npm,
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(folder),
                f"axe-core@{AXE_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    return script.read_text(encoding="utf-8")


def violations(page: Any, source: str) -> list[str]:
    """The serious and critical violations axe finds in the page as it is now."""
    page.add_script_tag(content=source)  # the context bypasses the page's CSP for this alone
    found: list[str] = page.evaluate(RUN, list(BLOCKING))
    return found


# Words split across two lines: each word of the page's text (outside code and preformatted
# output, which may break anywhere) whose box spans more than one line. A compound breaks at
# its hyphen as print does: its parts are the words.
BROKEN_WORDS = """() => {
  const broken = [];
  const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest("code, pre, svg, input, textarea")) continue;
    for (const match of node.data.matchAll(/[^\\s-]{2,}/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(match[0]);
    }
  }
  return broken;
}"""


# Names inside a path split across two lines: a path (in code) may wrap after a "/", never
# inside one of its names ("tests/test_invoic" then "e.py").
BROKEN_PATHS = """() => {
  const broken = [];
  for (const code of document.querySelectorAll("main code")) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/[^\\s\\/]{2,}/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast ratio of two ``rgb(r, g, b)`` colours."""

    def luminance(colour: str) -> float:
        parts = [int(float(p)) for p in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3]]
        linear = [
            (c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in parts
        ]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)
