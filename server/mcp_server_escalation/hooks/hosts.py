"""The coding hosts, registered in one place: a name each, described by the module named after it.

``NAMES`` is the whole registration: ``hook <name>`` and ``hook install <name>`` exist for
each, the relay forwards their runs, and the host module ``hooks/<name with _ for ->.py``
exports the host's ``HOST`` (a ``HostDescription``). This module uses the standard library
only, so the relay client (``relay.py``), imported before anything else on every hook run,
reads the names here at no cost; a description is loaded when it is first asked for.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .description import HostDescription

NAMES = ("claude-code", "cursor", "codex")


def module_of(name: str) -> str:
    """The module that describes the host ``name``."""
    return f"{__package__}.{name.replace('-', '_')}"


@functools.cache
def describe(name: str) -> HostDescription:
    """The registered host ``name``'s description; KeyError for a name not registered."""
    import importlib  # noqa: PLC0415 (loaded only when a description is asked for)

    from .description import HostDescription  # noqa: PLC0415

    if name not in NAMES:
        raise KeyError(name)
    found = importlib.import_module(module_of(name)).HOST
    if not isinstance(found, HostDescription) or found.name != name:
        raise TypeError(f"{module_of(name)}.HOST is not the description of {name}")
    return found


def every() -> tuple[HostDescription, ...]:
    """Every registered host's description, in the order of ``NAMES``."""
    return tuple(describe(name) for name in NAMES)


def http_hosts() -> tuple[str, ...]:
    """The hosts that can post their hooks over HTTP (``hook install --http``, the hook routes)."""
    return tuple(host.name for host in every() if host.http)
