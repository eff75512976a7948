"""The failure records' tokens, exactly as SQLite's FTS5 index makes them.

Guidance on PostgreSQL indexes and searches the tokens FTS5 would (``rules.guidance.fts``), so both
backends match and weigh the same words. ASCII text (most error text) is split here by
FTS5's own rule for it: a token is a run of ASCII letters and digits, lower-cased. Any
other text is split by SQLite's tokenizer itself, through an FTS5 table in memory (one per
thread): its Unicode tables (categories, case folding, which diacritics go) are the
definition, and a copy of them in Python would drift from it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence

from ..rules.guidance import fts

# The tokenizer of the FTS5 index (SQLite's migration 7).
TOKENIZER = "unicode61 remove_diacritics 2"
# FTS5 keeps at most this many bytes of a token (FTS5_MAX_TOKEN_SIZE).
MAX_TOKEN_BYTES = 32768

_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    """This thread's FTS5 table in memory, whose index shows how a text was tokenized."""
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:")
        # A token cut at FTS5's byte limit may end inside a character.
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        conn.execute(f"CREATE VIRTUAL TABLE body USING fts5(text, tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE words USING fts5vocab(body, 'instance')")
        _local.conn = conn
    return conn


def _sqlite_tokens(text: str) -> list[str]:
    conn = _tokenizer()
    # A lone surrogate (JSON can carry one) has no UTF-8 form: it separates, as any
    # character that is not a letter or digit does.
    valid = text.encode("utf-8", "replace").decode("utf-8")
    with conn:
        conn.execute("INSERT INTO body (rowid, text) VALUES (1, ?)", (valid,))
        rows = conn.execute("SELECT term FROM words ORDER BY offset").fetchall()
        conn.execute("DELETE FROM body WHERE rowid = 1")
    return [row[0] for row in rows]


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` as FTS5's unicode61 tokenizer (remove_diacritics 2) makes
    them, in order, repeats kept."""
    if text.isascii():
        return [token[:MAX_TOKEN_BYTES] for token in _ASCII_TOKEN.findall(text.lower())]
    return _sqlite_tokens(text)


def record_terms(columns: Sequence[str | None]) -> fts.Terms:
    """What a record whose indexed columns (``fts.COLUMNS`` order) hold these texts gives
    the index."""
    return fts.index_terms([tokens(text) if text else [] for text in columns])
