"""Adapters: what turns the outside world's requests into service calls, and back.

- ``mcp/``: the MCP surface (tools, resources, prompts, elicitation, client notifications,
  the tools' schemas), served by either transport;
- ``stdio/`` and ``http/``: the two transports an MCP client reaches the server by;
- ``composition/``: where the server is assembled (``build_server``) and its lifespan;
- ``console/``: the operator's web console.

Adapters only adapt: typed arguments in, one service call, a model out. No SQL and no
threshold logic lives here.
"""
