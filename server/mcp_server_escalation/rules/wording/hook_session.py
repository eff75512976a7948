"""The templates of what a host session is told as it starts (prompts/hooks.toml), with the
placeholders the code supplies: the task and what it learned, and, while an escalation holds
the task, what to do first in words that hold with hooks only (hooks/runner.py)."""

from __future__ import annotations

TEMPLATE_FIELDS: dict[str, list[str]] = {
    "hook_session_context": ["task_id", "title", "status", "message", "feedback"],
    "hook_session_pending": ["task_id", "escalation_id", "type", "wait_seconds"],
    "hook_session_answered": ["task_id", "escalation_id", "response_type"],
}
