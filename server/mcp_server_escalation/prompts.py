"""Prompt templates as data, versioned and checked against golden output.

Every word the model or the operator reads comes from the TOML files in ``prompts/``: each
file has a ``version`` and a ``[templates.NAME]`` table per template with its ``text``.
``TEMPLATES`` below is the contract between the code and those files: the name of each
template the code renders and the placeholders it supplies. It holds no wording.

Loading is strict, so a broken prompt set fails at start-up, never as a silently dropped
section: a missing template, an unknown template, an unknown field, or a placeholder the
code does not supply is a ``ConfigError``. A user may point ``--prompts DIR`` at a copy of
the folder to change the wording.
"""

from __future__ import annotations

import functools
import string
import tomllib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError
from .rules.triggers.records import TEMPLATES as TRIGGER_TEMPLATES
from .rules.wording.argument_errors import TEMPLATE_FIELDS as ARGUMENT_TEMPLATES
from .rules.wording.elicitation import TEMPLATE_FIELDS as ELICITATION_TEMPLATES
from .rules.wording.hook_input import STORE_DOWN_TEMPLATES as HOOK_STORE_DOWN_TEMPLATES
from .rules.wording.hook_input import STORE_ERROR_TEMPLATES as HOOK_STORE_ERROR_TEMPLATES
from .rules.wording.hook_session import TEMPLATE_FIELDS as HOOK_SESSION_TEMPLATES
from .rules.wording.spoken import spoken

# The wait a message asks for (``get_escalation``'s ``wait_seconds``) is not passed by the
# code that renders it: the book fills it in, with the wait asked of the connection whose call
# is being served (adapters/mcp/waits.py sets it for the call), else the operator's default.
WAIT_PLACEHOLDER = "wait_seconds"
ASKED_WAIT: ContextVar[int | None] = ContextVar("asked_wait", default=None)
DEFAULT_WAIT_SECONDS = 4  # settings.WaitingConfig.seconds

# name -> the placeholders the code passes when it renders that template
TEMPLATES: dict[str, frozenset[str]] = {
    name: frozenset(fields)
    for name, fields in {
        # directives: what the model must do next
        "directive_proceed": ["task_id"],
        "directive_proceed_with_approach": ["task_id", "approach"],
        "directive_pause_pending": ["task_id", "escalation_id", "type", "wait_seconds"],
        "directive_pause_unacknowledged": ["task_id", "escalation_id", "response_type"],
        "directive_stop_terminated_by_human": ["task_id"],
        "directive_stop_completed": ["task_id"],
        "directive_stop_abandoned": ["task_id"],
        # tool-specific messages when the directive is proceed
        "message_task_started": ["task_id"],
        "message_task_taken_over": ["task_id"],
        "message_failure_recorded": [
            "task_id",
            "signal_type",
            "consecutive",
            "threshold",
            "occurrences",
        ],
        "message_progress_recorded": ["task_id"],
        "message_edit_allowed": ["task_id", "count"],
        "message_escalation_raised": ["task_id", "escalation_id", "wait_seconds"],
        "message_escalation_answered": ["task_id", "escalation_id", "response_type", "content"],
        "message_escalation_waiting": ["task_id", "escalation_id", "type", "revision", "wait_seconds"],
        "message_escalation_unchanged": ["task_id", "escalation_id", "type", "revision", "wait_seconds"],
        "message_acknowledged_guidance": ["task_id", "content"],
        "message_acknowledged_override": ["task_id", "content"],
        "message_acknowledged_approval": ["task_id", "file_limit", "scope"],
        "message_acknowledged_termination": ["task_id", "content"],
        "message_escalation_closed": ["task_id", "escalation_id", "status"],
        # a wait's progress notifications, for the client (and the person) watching the call
        "progress_waiting": ["escalation_id"],
        # a wait run as an MCP task: its status message, for the client (and the person) watching it
        "task_wait_working": ["escalation_id"],
        "task_wait_asking": ["escalation_id"],
        "task_wait_completed": ["escalation_id"],
        "task_wait_cancelled": ["escalation_id"],
        # one line per trigger, for the operator and the model, and the warning a step
        # before a threshold (Thresholds.warn_before): each trigger's record declares its own
        **TRIGGER_TEMPLATES,
        # a counting trigger's summary led by the task's latest error (services/headlines.py)
        "trigger_latest_error": ["error", "summary"],
        # why check_edit refused a path
        "reason_outside_root": ["path"],
        "reason_out_of_scope": ["path", "scope"],
        "reason_file_limit": ["path", "count", "limit"],
        "reason_task_not_active": ["status", "escalation_id"],
        # why end_task(completed) was refused: one per condition of the double-entry rule
        # (services/tasks.py COMPLETION_REFUSALS, each condition's name after the prefix)
        "completion_refused_escalation_holds": ["task_id", "escalation_id"],
        "completion_refused_tests_fail": ["task_id", "failed"],
        "completion_refused_attempt_rejected": ["task_id", "steps"],
        "completion_refused_findings_outstanding": ["task_id", "stages"],
        # a call's arguments that break the tool's schema
        **ARGUMENT_TEMPLATES,
        # attempts, stagnation cycles and the failure summary
        "message_attempt_recorded": ["task_id", "step", "attempt_number", "cycle"],
        "message_attempt_accepted": ["task_id", "step", "attempt_number"],
        "message_stagnation_cycle": ["task_id", "step", "cycle", "escalated_to"],
        "failure_summary": ["step", "cycle", "count", "patterns", "approaches", "latest"],
        "summary_pattern": ["pattern", "count"],
        "summary_approach": ["attempt_number", "approach"],
        # the reconstructed feedback of a step
        "feedback_escalation_header": ["step"],
        "feedback_escalation_entry": ["cycle", "source_step", "source_cycle", "summary"],
        "feedback_retry_header": ["step"],
        "feedback_retry_entry": ["attempts", "count", "feedback", "guard"],
        "feedback_findings_header": [],
        "feedback_finding_entry": [
            "stage",
            "kind",
            "status",
            "iteration",
            "failure_reason",
            "response",
        ],
        "feedback_human_header": [],
        "feedback_human_entry": [
            "escalation_id",
            "type",
            "response_type",
            "content",
            "responder",
            "at",
        ],
        "feedback_guidance_header": [],
        "feedback_omitted": ["omitted", "max_chars"],
        "feedback_truncated": ["max_chars"],
        "feedback_empty": ["task_id", "step"],
        # MCP prompts
        "prompt_retry_with_feedback": ["task_id", "step", "feedback"],
        "prompt_fix_review_findings": ["task_id", "findings"],
        "prompt_no_findings": ["task_id"],
        "prompt_escalation_briefing": [
            "escalation_id",
            "type",
            "status",
            "priority",
            "task_id",
            "title",
            "specification",
            "scope",
            "agent_id",
            "triggers",
            "evidence",
            "response_options",
            "answer_flags",
        ],
        "prompt_briefing_trigger": ["type", "summary", "criteria", "observed"],
        "prompt_resume_after_response": [
            "escalation_id",
            "task_id",
            "type",
            "response_type",
            "content",
            "directive",
        ],
        "prompt_resume_no_response": ["escalation_id", "task_id", "status", "wait_seconds"],
        # guidance lines: the few past failures that matter now
        "guidance_signature": ["signal_type", "kind", "message"],
        "guidance_line": [
            "severity",
            "signature",
            "adjustment",
            "count",
            "last_seen",
            "helpful",
            "harmful",
            "failure_id",
        ],
        "guidance_no_adjustment": [],
        # the operator side: notifier text, client log messages, elicitation (issue 5)
        "notify_text": ["priority", "escalation_id", "type", "task_id", "title", "headline", "options"],
        "notify_more": ["escalation_id", "bytes"],
        "notify_link": ["link"],
        "store_unavailable": [],
        "store_outcome_unknown": [],
        "tool_result_in_structured": ["message"],
        # a report outside a token's scope, on every route (rules/wording/scope_refusals.py)
        "scope_refused_task": ["task_id", "prefixes"],
        "scope_refused_no_task": ["prefixes", "task_field"],
        "scope_refused_project": ["project", "folders"],
        "scope_allowed_more": ["listed", "more"],
        "scope_method_unknown": ["method"],
        "notify_text_renotify": [
            "priority",
            "escalation_id",
            "type",
            "task_id",
            "title",
            "headline",
            "options",
            "minutes",
        ],
        "client_escalation_created": ["escalation_id", "type", "task_id", "headline"],
        "client_escalation_updated": ["escalation_id", "type", "task_id", "headline"],
        "client_escalation_answered": ["escalation_id", "task_id", "response_type", "responder"],
        "client_escalation_closed": ["escalation_id", "task_id", "status"],
        **ELICITATION_TEMPLATES,
        "cli_answer_with": ["command", "flags"],
        **{name: [] for name in ("cli_no_escalations", "plugin_script_missing")},
        "cli_no_escalations_pending": [],
        "cli_no_escalations_resolved": [],
        # a service's refusal in the operator's words, for the CLI and the console alike
        # (rules/operators/refusals.py); {answer}, {field}: the door's name (a flag, a form field)
        "refused_no_escalation": ["escalation_id", "db", "next"],
        "refused_no_task": ["task_id", "db", "next"],
        "refused_answered": ["escalation_id", "status", "task_id", "next"],
        "refused_closed": ["escalation_id", "status", "task_id", "next"],
        "refused_task_ended": ["escalation_id", "task_id", "task_status", "next"],
        "refused_changed": ["escalation_id", "next"],
        "refused_not_an_answer": ["escalation_id", "type", "answer", "answers"],
        "refused_needs_text": ["answer", "limit"],
        "refused_approve_only": ["answer", "approve", "file_limit", "add_scope"],
        "refused_limit_below_modified": ["limit", "modified", "task_id", "field"],
        "refused_file_limit_range": ["limit", "high", "field"],
        "refused_scope_too_large": ["count", "longest", "globs", "chars", "field"],
        "refused_option_range": ["count", "field"],
        "refused_no_answer_kind": ["answers"],
        "refused_too_long": ["length", "limit", "field"],
        "refused_not_a_number": ["text", "field"],
        # what to do next after a refusal, at each door
        "cli_next_list": ["store"],
        "cli_next_tasks": ["store"],
        "cli_next_show": ["escalation_id", "store"],
        "console_next_list": ["store"],
        "console_next_tasks": ["store"],
        "console_next_show": ["escalation_id", "store"],
        # the console's names for the answer form's fields, in refusals
        "console_field_file_limit": [],
        "console_field_add_scope": [],
        "console_field_content": [],
        "console_field_option": [],
        # host hooks: deny reasons, added context, Stop block reasons, notices (issue 6)
        "hook_task_title": ["host", "session_id"],
        "hook_ack_note": ["host"],
        "hook_deny_pending": ["task_id", "escalation_id", "type", "tool_name", "wait_seconds"],
        "hook_deny_unacknowledged": ["task_id", "escalation_id", "response_type"],
        "hook_deny_answer": ["task_id", "escalation_id", "response_type", "content", "message"],
        "hook_deny_stopped": ["task_id", "status", "message"],
        "hook_deny_edit": ["task_id", "path", "reasons", "message"],
        "hook_halt_pending": ["task_id", "escalation_id", "type"],
        "hook_halt_terminated": ["task_id", "content"],
        "hook_post_escalated": ["task_id", "escalation_id", "type", "summary", "message"],
        "hook_post_warning": ["task_id", "warning"],
        **HOOK_SESSION_TEMPLATES,
        "hook_stop_tests_failing": ["task_id", "passed", "failed"],
        "hook_stop_answer": ["task_id", "escalation_id", "response_type", "content", "message"],
        "hook_stop_unacknowledged": ["task_id", "escalation_id", "response_type"],
        "hook_notice_pending": ["task_id", "escalation_id", "type"],
        "hook_permission_reason": ["host", "tool_name", "request"],
        "hook_permission_question": ["tool_name", "request"],
        "hook_permission_pending": ["task_id", "escalation_id", "tool_name", "wait_seconds"],
        # the hook route's refusals over HTTP (adapters/http/hooks.py)
        "hook_http_unknown_host": ["host", "hosts"],
        "hook_http_bad_task": ["header", "task_id"],
        "hook_http_no_token": [],
        "hook_http_too_large": ["limit"],
        "hook_http_cut_short": [],
        "hook_http_store_not_open": [],
        "hook_http_not_recorded": ["reason"],
        "hook_http_no_decision": ["reason"],
        "hook_http_failed": [],
        "hook_http_store_down": [],
        "hook_http_store_down_maybe_recorded": [],
        # why a hook event cannot be used (rules/wording/hook_input.py): the command hook's
        # stderr, the relay's, the hook route's 400
        "hook_input_too_large": ["limit"],
        "hook_input_not_utf8": ["byte"],
        "hook_input_malformed_json": ["line", "column"],
        "hook_input_too_deep": [],
        "hook_input_unreadable": [],
        "hook_input_not_object": [],
        "hook_input_no_cwd": ["limit"],
        "hook_input_unknown_event": ["event"],
        "hook_input_unnamed_event": [],
        # a hook run's unexpected failure (a bug), on the hook's stderr (rules/wording/hook_input.py)
        "hook_failed": ["log"],
        "hook_failed_unlogged": [],
        "hook_store_failed": ["log"],
        "hook_store_failed_unlogged": [],
        "hook_failed_error": ["kind", "message"],
        # a hook run's stderr while its store does not answer, or a report kept behind others
        **HOOK_STORE_DOWN_TEMPLATES,
        # a hook run's stderr when it cannot open its store, or the store refuses its write
        **HOOK_STORE_ERROR_TEMPLATES,
        # the console's page while the store does not answer (adapters/console/app.py)
        "console_title_unavailable": [],
        "console_store_unavailable": [],
    }.items()
}


class _TemplateEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    description: str = ""


class ToolText(BaseModel):
    """What the model reads about one tool in tools/list."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1)
    arguments: dict[str, str] = Field(default_factory=dict)


class TemplateFileModel(BaseModel):
    """One prompts/*.toml file (schemas/prompts.schema.json is generated from this)."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1)
    description: str = ""
    templates: dict[str, _TemplateEntry] = Field(default_factory=dict)
    tools: dict[str, ToolText] = Field(default_factory=dict)
    prompts: dict[str, ToolText] = Field(default_factory=dict)
    resources: dict[str, ToolText] = Field(default_factory=dict)


@dataclass(frozen=True)
class Template:
    """One template, checked against the code's contract."""

    name: str
    text: str
    version: int
    source: str


def _placeholders(name: str, text: str, source: str) -> set[str]:
    found: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ConfigError(f"{source}: template {name!r}: {exc}") from exc
    for _literal, field, _spec, _conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier():
            raise ConfigError(f"{source}: template {name!r}: placeholder {{{field}}} must be a plain name")
        found.add(field)
    return found


def _read_file(path: Path) -> TemplateFileModel:
    try:
        return _parsed(path.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, ValidationError, OSError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


# Every server and runtime a process builds loads the prompts; parsing them is most of that.
# Keyed by the file's text, so an unchanged file is parsed once per process and a changed one
# anew; a file that fails to parse raises every time (an exception is never cached).
@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> TemplateFileModel:
    return TemplateFileModel.model_validate(tomllib.loads(text))


def _add_texts(path: Path, kind: str, found: dict[str, ToolText], target: dict[str, ToolText]) -> None:
    """A file's tool, prompt or resource descriptions; each is described in one file only."""
    for name, text in found.items():
        if name in target:
            raise ConfigError(f"{path}: {kind} {name!r} is described twice")
        target[name] = text


def _checked_template(
    path: Path, name: str, text: str, version: int, earlier: dict[str, Template]
) -> Template:
    """A template the code knows, defined once, using only the placeholders it is given."""
    if name not in TEMPLATES:
        raise ConfigError(f"{path}: unknown template {name!r}")
    if name in earlier:
        raise ConfigError(f"{path}: template {name!r} is also in {earlier[name].source}")
    unknown = _placeholders(name, text, str(path)) - TEMPLATES[name]
    if unknown:
        raise ConfigError(
            f"{path}: template {name!r} uses unknown placeholders "
            f"{sorted(unknown)}; allowed: {sorted(TEMPLATES[name])}"
        )
    return Template(name, text, version, str(path))


class PromptBook:
    """All templates, loaded and checked; ``render`` is strict."""

    def __init__(
        self,
        templates: dict[str, Template],
        directory: Path,
        tools: dict[str, ToolText],
        prompts: dict[str, ToolText] | None = None,
        resources: dict[str, ToolText] | None = None,
        *,
        wait_seconds: int = DEFAULT_WAIT_SECONDS,
    ) -> None:
        self._templates = templates
        self.wait_seconds = wait_seconds
        self.directory = directory
        self.tools = tools
        self.prompts = prompts or {}
        self.resources = resources or {}

    @classmethod
    def load(cls, directory: Path, *, wait_seconds: int = DEFAULT_WAIT_SECONDS) -> PromptBook:
        """Read every ``*.toml`` in ``directory`` and check it against ``TEMPLATES``;
        ``wait_seconds``: the wait messages ask for unless a call's connection needs another."""
        if not directory.is_dir():
            raise ConfigError(f"prompts directory {directory} does not exist")
        templates: dict[str, Template] = {}
        tools: dict[str, ToolText] = {}
        mcp_prompts: dict[str, ToolText] = {}
        resources: dict[str, ToolText] = {}
        for path in sorted(directory.glob("*.toml")):
            parsed = _read_file(path)
            _add_texts(path, "tool", parsed.tools, tools)
            _add_texts(path, "prompt", parsed.prompts, mcp_prompts)
            _add_texts(path, "resource", parsed.resources, resources)
            for name, entry in parsed.templates.items():
                templates[name] = _checked_template(path, name, entry.text, parsed.version, templates)
        missing = sorted(set(TEMPLATES) - set(templates))
        if missing:
            raise ConfigError(f"{directory}: missing templates {missing}")
        return cls(templates, directory, tools, mcp_prompts, resources, wait_seconds=wait_seconds)

    def render(self, name: str, **values: Any) -> str:
        """The template filled in; every placeholder of the contract must be supplied."""
        template = self._templates[name]
        expected = TEMPLATES[name]
        if WAIT_PLACEHOLDER in expected and WAIT_PLACEHOLDER not in values:
            values[WAIT_PLACEHOLDER] = self.asked_wait()
        if set(values) != expected:
            raise ConfigError(
                f"template {name!r} rendered with {sorted(values)}, expected {sorted(expected)}"
            )
        return template.text.format_map({key: spoken(key, value) for key, value in values.items()})

    def asked_wait(self) -> int:
        """The wait to ask for in the call being served."""
        asked = ASKED_WAIT.get()
        return self.wait_seconds if asked is None else asked

    def filler(self, name: str, *placeholders: str) -> Callable[..., str]:
        """``render`` for one template in a loop: the placeholders the caller will supply are
        checked here, once, and each call only formats (``fill(**values)``)."""
        expected = TEMPLATES[name]
        if set(placeholders) != expected:
            raise ConfigError(
                f"template {name!r} bound with {sorted(placeholders)}, expected {sorted(expected)}"
            )
        text = self._templates[name].text
        return lambda **values: text.format_map({key: spoken(key, value) for key, value in values.items()})

    def versions(self) -> dict[str, int]:
        """Template name -> version of the file it came from."""
        return {name: t.version for name, t in sorted(self._templates.items())}
