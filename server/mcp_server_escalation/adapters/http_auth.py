"""Bearer tokens for the HTTP transport: over HTTP the role comes from the token.

Two static tokens, set in the environment of the server process (never in a request):
``ESCALATION_AGENT_TOKEN`` grants the agent role, ``ESCALATION_OPERATOR_TOKEN`` the operator
role. A request without a valid token gets 401. The HTTP server refuses to start without at
least one token, so no one can reach the store anonymously over the network.
"""

from __future__ import annotations

import hmac
import os

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from ..errors import ConfigError
from ..models.limits import Role

AGENT_TOKEN_ENV = "ESCALATION_AGENT_TOKEN"  # noqa: S105 (a variable name, not a secret)
OPERATOR_TOKEN_ENV = "ESCALATION_OPERATOR_TOKEN"  # noqa: S105


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
    """The configured tokens; an error when there are none."""
    tokens: dict[str, Role] = {}
    if os.environ.get(AGENT_TOKEN_ENV):
        tokens[os.environ[AGENT_TOKEN_ENV]] = "agent"
    if os.environ.get(OPERATOR_TOKEN_ENV):
        tokens[os.environ[OPERATOR_TOKEN_ENV]] = "operator"
    if not tokens:
        raise ConfigError(
            f"serving over HTTP needs a bearer token: set {AGENT_TOKEN_ENV} (agents) and/or "
            f"{OPERATOR_TOKEN_ENV} (operators) in the server's environment"
        )
    return tokens


def auth_settings(host: str, port: int) -> AuthSettings:
    """Resource-server settings for the SDK (the tokens are static, no OAuth server runs)."""
    url = f"http://{host}:{port}"
    return AuthSettings(
        issuer_url=url,
        resource_server_url=f"{url}/mcp",
        required_scopes=None,
        validate_token_resource=False,
    )


def request_role(default: Role) -> Role:
    """The caller's role: from the bearer token over HTTP, else the server's ``--role``."""
    token = get_access_token()
    if token is None:
        return default
    return "operator" if "operator" in token.scopes else "agent"
