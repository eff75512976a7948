"""MCP over HTTP: bearer tokens (``auth``) and what a listening socket accepts (``serving``)."""
