"""Pydantic models: the shapes that cross the layers and the wire."""
