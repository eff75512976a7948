"""Bearer tokens for the HTTP transport: over HTTP the role, and the person, come from the token.

Tokens come from two places, both read once at start from the serving process's environment
(never from a request): the two shared tokens ``ESCALATION_AGENT_TOKEN`` (the agent role)
and ``ESCALATION_OPERATOR_TOKEN`` (the operator role), and the tokens file named in
``ESCALATION_TOKENS_FILE`` (``token_file.py``), one token per person, each with its role. A
shared token names nobody: it holds the name of its role (``operator``, ``agent``) and an
operator using it is recorded as today, by the name the answer gives. A person's token
names its holder, and that name, not one an answer gives, is recorded as who answered.

A request without a valid token gets 401. The HTTP server refuses to start without at least
one token, so no one can reach the store anonymously over the network; with one token held
twice (the shared tokens equal, every holder would be an operator; a file entry repeating
another's or a shared token); and with a token shorter than ``TOKEN_MIN_CHARS``.

No OAuth server exists behind these tokens, so a 401 names none: advertising protected-
resource metadata sent OAuth-capable clients looking for an authorization server, and
their user read "HTTP 404: Invalid OAuth error response" instead of "wrong token".
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from ...errors import ConfigError
from ...models.limits import Role
from ...rules.bounds.token_scope import Scope
from .token_file import TOKEN_MIN_CHARS, TOKENS_FILE_ENV, WHITE_SPACE_REFUSAL, read_tokens_file, token_digest

AGENT_TOKEN_ENV = "ESCALATION_AGENT_TOKEN"  # noqa: S105 (a variable name, not a secret)
OPERATOR_TOKEN_ENV = "ESCALATION_OPERATOR_TOKEN"  # noqa: S105
SHARED_TOKEN_ROLES: dict[str, Role] = {AGENT_TOKEN_ENV: "agent", OPERATOR_TOKEN_ENV: "operator"}


@dataclass(frozen=True)
class Holder:
    """Who presented a token: a person (``personal``, from the tokens file) or a shared
    token, which holds the name of its role; a person's token may carry a ``scope``."""

    name: str
    role: Role
    personal: bool
    scope: Scope | None = None


class TokenBook:
    """Every token the server accepts, by its SHA-256, with its holder.

    A presented token is digested and compared with every entry, each in constant time and
    without stopping at a match: how long a look-up takes says nothing of which entry, or
    how much of one, a guess matched (comparing digests, not tokens, also hides the
    length of the tokens)."""

    def __init__(self, entries: list[tuple[bytes, Holder]]) -> None:
        self._entries = entries

    def holder(self, token: str) -> Holder | None:
        """The holder of ``token``, or None."""
        digest = token_digest(token)
        found = None
        for known, holder in self._entries:
            if hmac.compare_digest(known, digest):
                found = holder
        return found

    def has_role(self, role: Role) -> bool:
        """Is any token of ``role`` known (the console needs an operator's)?"""
        return any(holder.role == role for _, holder in self._entries)


class StaticTokenVerifier:
    """Maps each configured token to its holder: the role as the only scope, a person's name
    as the subject (a shared token has none)."""

    def __init__(self, book: TokenBook) -> None:
        self._book = book

    def holder(self, token: str) -> Holder | None:
        """Who holds ``token`` (with its scope), or None."""
        return self._book.holder(token)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token with the role as its only scope, or None."""
        holder = self._book.holder(token)
        if holder is None:
            return None
        return AccessToken(
            token=token,
            client_id=holder.name if holder.personal else f"{holder.role}-token",
            scopes=[holder.role],
            subject=holder.name if holder.personal else None,
            claims=holder.scope.claims() if holder.scope else None,
        )


def load_tokens(env: Mapping[str, str] | None = None, *, none_given: str | None = None) -> TokenBook:
    """The configured tokens; an error when there are none (``none_given`` words it for the
    command that needs them, the console's own), one is short, or one is held twice."""
    env = os.environ if env is None else env
    shared = {name: env[name] for name in SHARED_TOKEN_ROLES if env.get(name)}
    _check_shared(shared)
    entries = [
        (token_digest(token), Holder(SHARED_TOKEN_ROLES[name], SHARED_TOKEN_ROLES[name], personal=False))
        for name, token in shared.items()
    ]
    file_name = env.get(TOKENS_FILE_ENV)
    if file_name:
        path = Path(file_name).expanduser()
        for number, entry in enumerate(read_tokens_file(path), start=1):
            _refuse_a_shared_token(path, number, entry.name, entry.digest, shared)
            scope = None
            if entry.projects or entry.task_prefixes:
                scope = Scope(tuple(entry.projects or ()), tuple(entry.task_prefixes or ()))
            entries.append((entry.digest, Holder(entry.name, entry.role, personal=True, scope=scope)))
    if not entries:
        raise ConfigError(
            none_given
            or f"serving over HTTP needs a bearer token: set {AGENT_TOKEN_ENV} (agents) and/or "
            f"{OPERATOR_TOKEN_ENV} (operators) in the server's environment, or name a tokens "
            f"file (one token per person) in {TOKENS_FILE_ENV}"
        )
    return TokenBook(entries)


def _check_shared(shared: dict[str, str]) -> None:
    """The shared tokens are long enough and not one value for both roles."""
    for env, token in shared.items():
        if not token.strip() or any(character.isspace() for character in token):
            raise ConfigError(f"{env}: {WHITE_SPACE_REFUSAL}")
        if len(token) < TOKEN_MIN_CHARS:
            raise ConfigError(
                f"{env}: {len(token)} characters, fewer than the {TOKEN_MIN_CHARS} a token needs "
                "(make one with: openssl rand -hex 16)"
            )
    if len(shared) == 2 and hmac.compare_digest(
        shared[AGENT_TOKEN_ENV].encode(), shared[OPERATOR_TOKEN_ENV].encode()
    ):
        raise ConfigError(
            f"{AGENT_TOKEN_ENV} and {OPERATOR_TOKEN_ENV} are the same: every agent would be an "
            "operator; give each role its own token"
        )


def _refuse_a_shared_token(path: Path, number: int, name: str, digest: bytes, shared: dict[str, str]) -> None:
    for env, token in shared.items():
        if hmac.compare_digest(token_digest(token), digest):
            raise ConfigError(
                f"tokens file {path}: [[tokens]] entry {number} ({name!r}), token: the same token "
                f"as {env}; every token names one holder: give each its own"
            )


def auth_settings() -> AuthSettings:
    """Bearer-token settings for the SDK: no resource URL, so no OAuth metadata anywhere.

    Without ``resource_server_url`` the SDK neither serves
    ``/.well-known/oauth-protected-resource`` nor names it in a 401's ``WWW-Authenticate``;
    the issuer is required by the model but read by nothing when no OAuth routes exist.
    """
    return AuthSettings(
        issuer_url="http://localhost",
        resource_server_url=None,
        required_scopes=None,
    )


def request_role(default: Role) -> Role:
    """The caller's role: from the bearer token over HTTP, else the server's ``--role``."""
    token = get_access_token()
    if token is None:
        return default
    return "operator" if "operator" in token.scopes else "agent"


def request_scope() -> Scope | None:
    """What the request's token may report on (its tokens file scope), or None: anything."""
    token = get_access_token()
    return None if token is None else Scope.from_claims(token.claims)


def request_person() -> str | None:
    """The person whose own token the request carries; None for a shared token or none."""
    token = get_access_token()
    return None if token is None else token.subject
