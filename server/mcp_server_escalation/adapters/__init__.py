"""Adapters: MCP tools (and later resources and prompts), the operator CLI.

Adapters only adapt: typed arguments in, one service call, a model out. No SQL and no
threshold logic lives here.
"""
