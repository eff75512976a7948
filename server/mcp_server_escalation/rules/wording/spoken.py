"""The values a prompt template is filled with, as words (pure, no I/O): a flag as yes or no,
a store's name in words, and every count and list as a value the template may say with its
noun, in its own words: ``{occurrences:occurrence|occurrences}`` reads "1 occurrence" or "4
occurrences", never "occurrence(s)"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .words import absent, counted, kind_words, name_words


class Count(int):
    """A count a template may say with its noun, in the template's own words:
    ``{occurrences:occurrence|occurrences}`` reads "1 occurrence" or "4 occurrences" (never
    "occurrence(s)"); any other format spec formats the number as usual."""

    def __format__(self, spec: str) -> str:
        one, bar, many = spec.partition("|")
        return counted(int(self), one, many) if bar else format(int(self), spec)


class Items(str):
    """Items joined by commas whose template may name them with their count's noun:
    ``{paths:path|paths}`` reads "path a.py" or "paths a.py, b.py"."""

    items: int

    def __new__(cls, items: list[str], empty: str) -> Items:
        made = super().__new__(cls, ", ".join(items) or empty)
        made.items = len(items)
        return made

    def __format__(self, spec: str) -> str:
        one, bar, many = spec.partition("|")
        return f"{one if self.items == 1 else many} {self}" if bar else format(str(self), spec)


def spoken(placeholder: str, value: Any) -> Any:
    """A value as words a person or a model reads: a flag as yes or no, a list as its items
    separated by commas (never Python's repr: ``['web/auth/**']`` reached the model), none as
    absent() says it ("any path" for an empty scope), an escalation's ``type`` and a failure's
    ``signal_type`` and a ``status`` as words ("repeated error", "missing dependency", "ended
    with its task", not ``repeated_error`` or ``agent_terminated``)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return Count(value)
    if isinstance(value, list | tuple | set | frozenset):
        return Items([str(spoken("", item)) for item in value], absent(placeholder))
    if value is None:
        return absent(placeholder)
    if isinstance(value, str) and placeholder in _NAMED:
        return _NAMED[placeholder](value)
    return value


# Placeholders whose value is one of the store's names, and how each is said in words.
_NAMED: dict[str, Callable[[str], str]] = {
    "type": kind_words,
    "signal_type": name_words,
    "status": name_words,
}
