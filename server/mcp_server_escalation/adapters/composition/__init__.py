"""The composition root: settings in, a wired ``MCPServer`` out (``server.build_server``)."""
