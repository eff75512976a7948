"""What the hooks know of one coding host, in one value (data, and the host's pure functions).

Each host module (``claude_code``, ``cursor``, ``codex``) exports its ``HOST``, a
``HostDescription``; ``hosts.py`` registers them by name. The protocol reads a payload and
writes an answer with it, the installer writes the host's settings file from it, triage
finds the project and classifies the tool with it, and the spool keeps the variables it
names: what differs by host elsewhere in the hooks is read from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from .events import Answer, HookEvent, ToolKind

# An event the installer registers, and the tool matcher of its group (None: no matcher).
Handler = tuple[str, str | None]


def _never(_payload: Mapping[str, Any]) -> bool:
    return False


class HostDescription(NamedTuple):
    """One coding host: how it speaks, where it reads its hooks, which tools it has."""

    name: str  # the hook entry (``hook <name>``) and the installer's host
    parse: Callable[[Mapping[str, Any]], HookEvent]  # a payload of this host as a HookEvent
    encode: Callable[[Answer, HookEvent], dict[str, Any] | None]  # an answer in its JSON
    settings_file: tuple[str, str]  # (folder, file) under the project or the home folder
    # "groups": Claude Code's layout (event -> matcher groups -> handlers, each with a type);
    # "flat": event -> handlers.
    layout: Literal["groups", "flat"]
    handlers: tuple[Handler, ...]  # what the installer registers, in its order
    # The variables that may name the project, in order, kept with a spooled event.
    project_variables: tuple[str, ...] = ()
    # The candidates for the project root, in order (the first usable one wins); None: the
    # project variables, then the event's working directory.
    project_dirs: Callable[[HookEvent, Mapping[str, str]], tuple[str | None, ...]] | None = None
    edit_tools: tuple[str, ...] = ()
    shell_tools: tuple[str, ...] = ()
    # Tools that read and change nothing, the host's own among them (a deferred tool's
    # schema, MCP resources): never denied, even during a pause.
    read_tools: tuple[str, ...] = ()
    settings_defaults: tuple[tuple[str, object], ...] = ()  # top-level keys the file must have
    recognises: Callable[[Mapping[str, Any]], bool] = _never  # its payload, at another host's entry
    # Other hosts that run this host's hooks with their own payloads (recognised by theirs):
    # such an event is answered in both forms.
    guests: tuple[str, ...] = ()
    http: bool = False  # it can post its hooks over HTTP (``hook install --http``)
    # Its hook reports a turn that ended on its provider's API error (a ``stop_failure``),
    # recorded as "<name> API": the host is then named in ``rules/reading/host_errors.HOSTS``,
    # so that such a record is never taught to the agent as its own mistake.
    api_errors: bool = False
    # The event whose ``asyncRewake`` handler wakes an idle agent (``hook install
    # --wake-minutes``); None when the host has no such handler.
    wake_event: str | None = None

    def project_candidates(self, event: HookEvent, env: Mapping[str, str]) -> tuple[str | None, ...]:
        """Where the project may be, in order."""
        if self.project_dirs is not None:
            return self.project_dirs(event, env)
        return (*(env.get(variable) for variable in self.project_variables), event.cwd)

    def tools(self) -> dict[str, ToolKind]:
        """Each of its tools, and what it does."""
        kinds: tuple[tuple[ToolKind, tuple[str, ...]], ...] = (
            ("edit", self.edit_tools),
            ("shell", self.shell_tools),
            ("read", self.read_tools),
        )
        return {tool: kind for kind, tools in kinds for tool in tools}
