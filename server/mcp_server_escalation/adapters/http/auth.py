"""Bearer tokens for the HTTP transport: over HTTP the role comes from the token.

Two static tokens, set in the environment of the server process (never in a request):
``ESCALATION_AGENT_TOKEN`` grants the agent role, ``ESCALATION_OPERATOR_TOKEN`` the operator
role. A request without a valid token gets 401. The HTTP server refuses to start without at
least one token, so no one can reach the store anonymously over the network; with one token
set as both (every holder would be an operator); and with a token shorter than
``TOKEN_MIN_CHARS``.

No OAuth server exists behind these tokens, so a 401 names none: advertising protected-
resource metadata sent OAuth-capable clients looking for an authorization server, and
their user read "HTTP 404: Invalid OAuth error response" instead of "wrong token".
"""

from __future__ import annotations

import hmac
import os

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from ...errors import ConfigError
from ...models.limits import Role

AGENT_TOKEN_ENV = "ESCALATION_AGENT_TOKEN"  # noqa: S105 (a variable name, not a secret)
OPERATOR_TOKEN_ENV = "ESCALATION_OPERATOR_TOKEN"  # noqa: S105
# Tokens are static and a 401 costs an attacker nothing, so a token must be out of reach of
# online guessing: 32 characters is what `openssl rand -hex 16` prints (128 random bits).
# Length cannot prove randomness, but it refuses the short words people type as tokens.
TOKEN_MIN_CHARS = 32


class StaticTokenVerifier:
    """Maps each configured token to its role (compared in constant time)."""

    def __init__(self, tokens: dict[str, Role]) -> None:
        self._tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token with the role as its only scope, or None."""
        for known, role in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return AccessToken(token=token, client_id=f"{role}-token", scopes=[role])
        return None


def tokens_from_env() -> dict[str, Role]:
    """The configured tokens; an error when there are none, one is short, or both are equal."""
    given = {env: os.environ[env] for env in (AGENT_TOKEN_ENV, OPERATOR_TOKEN_ENV) if os.environ.get(env)}
    if not given:
        raise ConfigError(
            f"serving over HTTP needs a bearer token: set {AGENT_TOKEN_ENV} (agents) and/or "
            f"{OPERATOR_TOKEN_ENV} (operators) in the server's environment"
        )
    for env, token in given.items():
        if len(token) < TOKEN_MIN_CHARS:
            raise ConfigError(
                f"{env}: {len(token)} characters, fewer than the {TOKEN_MIN_CHARS} a token needs "
                "(make one with: openssl rand -hex 16)"
            )
    if len(given) == 2 and hmac.compare_digest(
        given[AGENT_TOKEN_ENV].encode(), given[OPERATOR_TOKEN_ENV].encode()
    ):
        raise ConfigError(
            f"{AGENT_TOKEN_ENV} and {OPERATOR_TOKEN_ENV} are the same: every agent would be an "
            "operator; give each role its own token"
        )
    roles: dict[str, Role] = {AGENT_TOKEN_ENV: "agent", OPERATOR_TOKEN_ENV: "operator"}
    return {token: roles[env] for env, token in given.items()}


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
