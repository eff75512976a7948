"""What a rule needs of the prompt book: a template rendered by name (pure: a protocol).

The rules word their outcomes from ``prompts/`` through a book they are handed; they name
only this protocol, never ``prompts.PromptBook``, so ``prompts.py`` (which reads the
rules' words and the triggers' templates) is imported by the rules of nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Book(Protocol):
    """The templates of prompts/, rendered strictly (``prompts.PromptBook`` is one)."""

    def render(self, name: str, **values: Any) -> str:
        """The template ``name`` filled in with ``values``."""
        ...

    def filler(self, name: str, *placeholders: str) -> Callable[..., str]:
        """``render`` for one template in a loop, its placeholders checked once."""
        ...
