"""``python -m mcp_server_escalation``: the same as the console script."""

from .cli import main
from .process import claim

claim()

raise SystemExit(main())
