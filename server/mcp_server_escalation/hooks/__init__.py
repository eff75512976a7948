"""Host hooks: an adapter that turns coding hosts' hook events into the tools' service calls.

``mcp-server-escalation hook claude-code|cursor|codex`` reads one event on stdin and answers
on stdout. ``hosts`` (the registry: a name per host), ``description`` (what is known of one
host), ``claude_code``, ``cursor`` and ``codex`` (each host's description: its payloads and
JSON answers, settings file, tools and project variables), ``events`` (the normalised event
and answer), ``protocol`` (which host sent it), ``plan`` (a finished tool call -> the service
calls that record it, pure), ``runner`` (binding, gating, pausing, recording, on the same
services and store as the MCP tools), ``install`` (writing any host's settings file). Nothing
here imports the MCP SDK.
"""
