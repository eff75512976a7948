"""MCP over stdin/stdout: served on the event loop where it can be (``transport``)."""
