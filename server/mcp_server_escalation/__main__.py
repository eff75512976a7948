"""``python -m mcp_server_escalation``: the same as the console script."""

from .cli import main

raise SystemExit(main())
