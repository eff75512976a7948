"""The tokens file: one bearer token per person, named in ``ESCALATION_TOKENS_FILE``.

A team gives each operator a token of their own, so an answer records who gave it. The
file is TOML, one ``[[tokens]]`` entry per token::

    [[tokens]]
    name = "alice"                 # recorded as the responder of alice's answers
    role = "operator"              # operator | agent
    sha256 = "5e88...9f2a"         # printf %s "$TOKEN" | sha256sum

    [[tokens]]
    name = "ci-runners"
    role = "agent"
    token = "..."                  # the token itself (then the file is a secret)
    projects = ["/srv/ci/shop"]    # optional: hook events only from these folders
    task_prefixes = ["ci-"]        # optional: hook events only for tasks named so

Each entry holds ``sha256`` (the hex digest of the token: the file then holds nothing that
opens the server, and can be read, copied and reviewed like any config) or ``token`` (the
token itself, checked for its length; only the digest is kept in memory either way). A
digest cannot be checked for the token's length: whoever makes the token makes it long
(``openssl rand -hex 16``). Tokens are random, not passwords: a fast, unsalted digest is
enough, because 128 random bits cannot be guessed back from it.

Not a table of the config file: every process reads the config, including hooks and the
agents' own servers, and it lives in the user's config folder, which the user's agents can
write; an agent that could add itself an operator token would answer its own escalations.
A file only the serving account reads, named in that account's environment, keeps it apart.

An entry may carry a scope: ``projects`` (absolute folders) and ``task_prefixes`` (the
starts of task ids). A hook event posted with that token must come from a project inside
one of the folders (its ``cwd``) and name, in ``X-Escalation-Task``, a task that starts
with one of the prefixes; each that is given must hold (``rules/bounds/token_scope.py``). A tool
call on ``/mcp`` with that token must name such a task, whose project lies inside the
folders (``services/scope.py``). Without either the token may report on any task, as
agents are not kept apart otherwise.

A bad file stops the server at start, naming the entry, the field and the problem, and
never the token itself.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...errors import ConfigError
from ...models.limits import Role

TOKENS_FILE_ENV = "ESCALATION_TOKENS_FILE"
# Tokens are static and a 401 costs an attacker nothing, so a token must be out of reach of
# online guessing: 32 characters is what `openssl rand -hex 16` prints (128 random bits).
# Length cannot prove randomness, but it refuses the short words people type as tokens.
TOKEN_MIN_CHARS = 32
TOKEN_MAX_CHARS = 4096
# A token travels after "Bearer " in a header, where white space ends it: one blank, or
# padded with spaces, would be a token nobody can present (or, 32 spaces, one anybody can).
TOKEN_PATTERN = r"^\S+$"  # noqa: S105 (a pattern, not a secret)
WHITE_SPACE_REFUSAL = (
    "holds white space (blank or padded): a token is one word (make one with: openssl rand -hex 16)"
)
# A name is recorded as who answered and shown in the console: a login name or an email
# address, nothing that could pass for markup or another field.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$"
TOKENS_MAX = 1000
# A scope's lists: a few folders or prefixes per person, each an absolute path or the start
# of a task id (models/limits.py: TASK_ID_PATTERN).
SCOPE_ITEMS_MAX = 100
PROJECT_PATTERN = r"^/.{0,4095}$"
TASK_PREFIX_PATTERN = r"^[A-Za-z0-9._:/@-]{1,128}$"


class TokenEntry(BaseModel):
    """One ``[[tokens]]`` entry: who holds the token, in which role, and the token or its digest."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    role: Literal["agent", "operator"]
    token: Annotated[
        str | None, Field(min_length=TOKEN_MIN_CHARS, max_length=TOKEN_MAX_CHARS, pattern=TOKEN_PATTERN)
    ] = None
    sha256: Annotated[str | None, Field(pattern=r"^[0-9a-fA-F]{64}$")] = None
    projects: Annotated[
        list[Annotated[str, Field(pattern=PROJECT_PATTERN)]] | None,
        Field(min_length=1, max_length=SCOPE_ITEMS_MAX),
    ] = None
    task_prefixes: Annotated[
        list[Annotated[str, Field(pattern=TASK_PREFIX_PATTERN)]] | None,
        Field(min_length=1, max_length=SCOPE_ITEMS_MAX),
    ] = None

    @model_validator(mode="after")
    def _token_or_digest(self) -> TokenEntry:
        if (self.token is None) == (self.sha256 is None):
            raise ValueError("give exactly one of token and sha256")
        return self

    @property
    def digest(self) -> bytes:
        """The SHA-256 of the token, whichever way the entry gives it."""
        if self.sha256 is not None:
            return bytes.fromhex(self.sha256)
        return token_digest(self.token or "")


class TokensFile(BaseModel):
    """The whole file: a list of entries and nothing else."""

    model_config = ConfigDict(extra="forbid")

    tokens: Annotated[list[TokenEntry], Field(min_length=1, max_length=TOKENS_MAX)]


def token_digest(token: str) -> bytes:
    """The SHA-256 of a token as presented (what every comparison compares)."""
    return hashlib.sha256(token.encode()).digest()


def read_tokens_file(path: Path) -> list[TokenEntry]:
    """The entries of the tokens file at ``path``; a ConfigError naming the entry, the field and
    the problem for anything wrong (never the token)."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"tokens file {path} ({TOKENS_FILE_ENV}): {exc}") from None
    try:
        entries = TokensFile.model_validate(data).tokens
    except ValidationError as exc:
        raise ConfigError(f"tokens file {path}: {_first_problem(exc, data)}") from None
    _refuse_conflicts(path, entries)
    return entries


def _first_problem(exc: ValidationError, data: object) -> str:
    """``[[tokens]] entry 2 ("bob"), role: <what is wrong>``, without the value (it may be the token)."""
    error = exc.errors(include_input=False, include_url=False)[0]
    where = list(error["loc"])
    if len(where) < 2 or where[0] != "tokens" or not isinstance(where[1], int):
        return f"{'.'.join(map(str, where)) or 'the file'}: {error['msg']} (it holds [[tokens]] entries only)"
    index = where[1]
    entries = data.get("tokens") if isinstance(data, dict) else None
    given = entries[index] if isinstance(entries, list) and index < len(entries) else None
    name = given.get("name") if isinstance(given, dict) else None
    named = f" ({name!r})" if isinstance(name, str) and len(name) <= 128 else ""
    field = ".".join(map(str, where[2:])) or "entry"
    return f"[[tokens]] entry {index + 1}{named}, {field}: {_said(error['msg'], error['type'], field)}"


# What a field must hold, in the file's words, where pydantic's leave out the limit or the fix.
FIELD_WORDS = {
    "role": "must be 'agent' or 'operator'",
    "name": "1 to 128 letters, digits and . _ @ + - (starting with a letter or digit)",
    "sha256": '64 hex digits: the SHA-256 of the token (printf %s "$TOKEN" | sha256sum)',
    "projects": f"a list of 1 to {SCOPE_ITEMS_MAX} absolute folders (each starting with /)",
    "task_prefixes": f"a list of 1 to {SCOPE_ITEMS_MAX} starts of task ids (1-128 of A-Za-z0-9._:/@-)",
}


def _said(message: str, kind: str, field: str) -> str:
    """Pydantic's words, with the limit or the fix where they leave it out."""
    if kind in ("missing", "extra_forbidden"):
        return message
    words = FIELD_WORDS.get(field.split(".", maxsplit=1)[0])
    if words is not None:
        return words
    if field == "token" and kind == "string_pattern_mismatch":
        return WHITE_SPACE_REFUSAL
    if field == "token" and "at least" in message:
        return f"{message}: a token needs {TOKEN_MIN_CHARS} (make one with: openssl rand -hex 16)"
    return message.removeprefix("Value error, ")


def _refuse_conflicts(path: Path, entries: Sequence[TokenEntry]) -> None:
    """No token twice; one name never in two roles."""
    seen: dict[bytes, int] = {}
    roles: dict[str, tuple[Role, int]] = {}
    for number, entry in enumerate(entries, start=1):
        first = seen.setdefault(entry.digest, number)
        if first != number:
            raise ConfigError(
                f"tokens file {path}: [[tokens]] entry {number} ({entry.name!r}), token: the same "
                f"token as entry {first}; every token names one holder: give each its own"
            )
        role, at = roles.setdefault(entry.name, (entry.role, number))
        if role != entry.role:
            raise ConfigError(
                f"tokens file {path}: [[tokens]] entry {number} ({entry.name!r}), role: "
                f"{entry.name!r} is {role} in entry {at}; one name holds one role"
            )
