"""Write the hooks and the MCP server of the Claude Code plugin (.claude-plugin/plugin.json)
from the installer's (hooks/install.py), worded from prompts/; tests/test_packaging.py checks
that the file is what this writes. Usage: python scripts/plugin_manifest.py"""

from __future__ import annotations

import json
from pathlib import Path

from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.hooks.install import plugin_hooks, plugin_server
from mcp_server_escalation.prompts import PromptBook

PLUGIN = Path(__file__).resolve().parent.parent / ".claude-plugin" / "plugin.json"


def main() -> None:
    missing = PromptBook.load(data_dir("prompts")).render("plugin_script_missing")
    manifest = json.loads(PLUGIN.read_text(encoding="utf-8"))
    manifest["mcpServers"] = {"escalation": plugin_server(missing)}
    manifest["hooks"] = plugin_hooks(missing)
    PLUGIN.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
