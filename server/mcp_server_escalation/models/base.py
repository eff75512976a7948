"""The base of the models that cross the wire in tool results."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A result-side model. Its validator is built on first use, not at import, so a server
    that has not yet answered a call has not paid for it (cold start)."""

    model_config = ConfigDict(defer_build=True)
