"""The JSON Schemas in ``schemas/``, generated from the models (never written by hand).

``python -m mcp_server_escalation.adapters.mcp.schemas`` rewrites them;
``tests/test_schemas.py`` fails when a checked-in file differs from what this generates.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ...datafiles import data_dir
from ...prompts import PromptBook, TemplateFileModel
from ...settings import ConfigFile, Settings


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def generate() -> dict[str, str]:
    """File name (relative to schemas/) -> content."""
    from .tools import build_tools  # noqa: PLC0415

    files = {
        "config.schema.json": _dump(ConfigFile.model_json_schema()),
        "prompts.schema.json": _dump(TemplateFileModel.model_json_schema()),
    }
    # From the models and the default prompts, never from the files this is checked against.
    prompts = PromptBook.load(data_dir("prompts"))
    for tool in build_tools(Settings(), prompts, use_published=False):
        files[f"tools/{tool.name}.input.json"] = _dump(tool.parameters)
        files[f"tools/{tool.name}.output.json"] = _dump(tool.output_schema)
    return files


def write(target: Path) -> list[str]:
    """Write every schema under ``target``; returns the files that changed."""
    changed = []
    for name, content in generate().items():
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    for name in write(Path(sys.argv[1]) if len(sys.argv) > 1 else data_dir("schemas")):
        sys.stderr.write(f"wrote {name}\n")
