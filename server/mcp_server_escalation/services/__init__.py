"""Services: the product's rules, shared by the MCP tools and the operator CLI.

Nothing here knows MCP. Each service takes the process's ``Runtime`` (store, prompts,
patterns, settings, clock) and returns models from ``models``.
"""
