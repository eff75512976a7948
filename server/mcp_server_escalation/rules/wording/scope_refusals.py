"""A token scope's refusal in words (pure): the one wording of every door that refuses a report.

The MCP tools, resources and prompts and the console's pages (``services/scope.py``) and
the hook route (``adapters/http/hooks.py``) refuse a report outside a token's scope with a
``ScopeRefusal``; the agent over MCP, the operator in the console and the person reading the
hook's answer read it from the ``scope_refused_*`` templates of ``prompts/tools.toml``: the
task or folder as named and what the scope allows, plainly listed (never a repr), a few of
each with how many more.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..bounds.token_scope import ScopeRefusal
from ..reading.salient import one_line
from .book import Book

# A scope may list a hundred prefixes or folders: the refusal names the first few.
SHOWN_ALLOWED = 5
# A folder may be 4,096 characters long; a name in a refusal is one line of at most this.
NAME_CHARS = 200


def scope_refusal_words(book: Book, refusal: ScopeRefusal, task_field: str) -> str:
    """What the caller reads about ``refusal``; ``task_field`` names where it names a task
    (``task_id``, the hook's ``X-Escalation-Task`` header)."""
    allowed = listed_few(book, refusal.allowed)
    if refusal.side == "project":
        return book.render("scope_refused_project", project=_name(refusal.named), folders=allowed)
    if refusal.side == "no_task":
        return book.render("scope_refused_no_task", prefixes=allowed, task_field=task_field)
    return book.render("scope_refused_task", task_id=_name(refusal.named), prefixes=allowed)


def _name(named: str) -> str | None:
    """A task or folder on one line, clipped (None, which the book words, when none was named)."""
    return one_line(named, NAME_CHARS) or None


def listed_few(book: Book, names: Sequence[str]) -> str:
    """The first few ``names``, each on one line and clipped, and how many more: a scope's
    prefixes or folders here, the steps or stages that refuse ``end_task`` elsewhere."""
    shown = ", ".join(one_line(item, NAME_CHARS) for item in names[:SHOWN_ALLOWED])
    more = len(names) - SHOWN_ALLOWED
    return book.render("scope_allowed_more", listed=shown, more=more) if more > 0 else shown
