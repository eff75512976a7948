"""The console's pages: Jinja2 templates (``templates/``) with autoescape and strict undefined.

Every value reaches a page escaped unless a template says otherwise (none does): what an
agent wrote (errors, questions, paths, options) is text, never markup, by default rather
than by discipline. A name a template does not get is an error at render, not an empty
string. The filters say the store's names in words (``rules/wording/words.py``, as the CLI does)
and dates as a person reads them: "4 min ago", the exact time on hover; a count with its
noun as a person writes it ("1 time", "4 times": ``n | counted("time", "times")``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from ...rules.triggers.records import RAISED_BY_AGENT, view_of
from ...rules.wording.timeline import recent_entry
from ...rules.wording.words import (
    NOTHING,
    absent,
    ago,
    counted,
    criteria_words,
    duration,
    field_words,
    kind_words,
    name_words,
    rate_words,
    readable_time,
    replay_words,
    trigger_words,
    yes_no,
)

TEMPLATES = Path(__file__).parent / "templates"


def exact(at: str) -> str:
    """The exact time, in UTC, as a person reads it: 2026-11-28 11:13:28 UTC."""
    return readable_time(at)


def words(value: Any) -> str:
    """Any stored value as words: a flag as yes/no, a list as its items, a name in words."""
    if value is None or value in ("", [], {}):
        return NOTHING
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, dict):
        return ", ".join(
            f"{field_words(str(k))} {rate_words(str(k), v) or words(v)}" for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return ", ".join(words(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return name_words(value) if isinstance(value, str) else str(value)


def percent(value: Any) -> str:
    """A rate as a whole percentage; anything else in words."""
    return f"{value:.0%}" if isinstance(value, int | float) and not isinstance(value, bool) else words(value)


def without(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The record without ``keys`` (a fingerprint is for matching, not for reading)."""
    return {key: value for key, value in record.items() if key not in keys}


def place(item: dict[str, Any]) -> str:
    """``file:line`` of an occurrence or action (the file alone without a line)."""
    file = item.get("file")
    if not file:
        return absent("place")
    return f"{file}:{item['line']}" if item.get("line") is not None else str(file)


def breakable(path: Any) -> Markup:
    """A path, escaped, that a narrow column may wrap after each ``/`` (``<wbr>``) rather than
    inside a name: "tests/" then "test_invoice.py", never "test_invoic" then "e.py"."""
    return Markup("/<wbr>").join(escape(part) for part in str(path).split("/"))


def path_segment(value: str) -> str:
    """A value as one path segment of a link (``/tasks/...``), escaped again when placed."""
    return quote(value, safe="")


def environment() -> jinja2.Environment:
    """The console's template environment."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # An empty value: what is missing in words where a page knows it (``absent("files")``),
    # else the generic ``nothing``; both from rules/wording/words.py, as the CLI says them.
    env.globals["nothing"] = NOTHING
    env.globals["absent"] = absent
    env.globals["replay"] = replay_words
    env.filters.update(
        kind=kind_words,
        counted=counted,
        trigger=trigger_words,
        criteria=lambda criteria: criteria_words(criteria, words),
        field=field_words,
        words=words,
        ago=ago,
        exact=exact,
        percent=percent,
        duration=duration,
        place=place,
        without=without,
        segment=path_segment,
        breakable=breakable,
        story=recent_entry,
        view=view_of,
    )
    env.globals["raised_by_agent"] = RAISED_BY_AGENT
    return env


class Pages:
    """Renders a page of the console (with the session's CSRF token for its log-out form)."""

    def __init__(self) -> None:
        self.templates = Jinja2Templates(env=environment())

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        """The template ``name`` filled with ``context`` (``title`` and ``csrf`` included)."""
        context.setdefault("csrf", None)
        return self.templates.TemplateResponse(request, name, context, status_code=status)
