"""Host hooks: an adapter that turns coding hosts' hook events into the tools' service calls.

``mcp-server-escalation hook claude-code|cursor|codex`` reads one event on stdin and answers
on stdout. ``events`` (the normalised event and answer), ``claude_code``, ``cursor`` and
``codex`` (each host's payloads and JSON answers), ``protocol`` (which host sent it), ``plan`` (a finished
tool call -> the service calls that record it, pure), ``runner`` (binding, gating, pausing,
recording, on the same services and store as the MCP tools), ``install`` (writing the host
configuration). Nothing here imports the MCP SDK.
"""
