"""How the streamable HTTP transport listens: allowed Host/Origin names and the body limit.

DNS rebinding: a web page the operator visits can make the browser send requests to a
name that resolves to this server. The SDK checks Host and Origin only when it listens on
a loopback name, and not at all for ``--host 0.0.0.0`` or a LAN address, which is where a
server reachable by others needs it most. So the check is always on: the loopback names,
the address given with ``--host`` (unless it is a wildcard) and the names given with
``--allowed-host`` / ``--allowed-origin``; anything else gets 421 (Host) or 403 (Origin).

Tokens travel in plain text over HTTP: beyond loopback the operator is told, loudly, to
put a TLS reverse proxy in front.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

from ...rules.bounds.request_size import largest_json_bytes

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 (names to recognise, not to bind)
# The JSON-RPC envelope around a tool's arguments: jsonrpc, id, method, the tool's name and
# a _meta with a progress token or trace context. Generous: it is slack, not a limit.
ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Listen:
    """Where the HTTP server listens and which names its clients may use for it."""

    host: str = "127.0.0.1"
    port: int = 8765
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    allowed_origins: Sequence[str] = field(default_factory=tuple)

    @property
    def beyond_loopback(self) -> bool:
        """True when other machines can reach the port."""
        return self.host not in LOOPBACK_HOSTS


def _host_port(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def transport_security(listen: Listen) -> TransportSecuritySettings:
    """Host/Origin checks on for every ``--host``, with the allow-list the options give."""
    hosts = [_host_port(name, "*") for name in sorted(LOOPBACK_HOSTS)]
    origins = [f"http://{_host_port(name, '*')}" for name in sorted(LOOPBACK_HOSTS)]
    if listen.host not in LOOPBACK_HOSTS | WILDCARD_HOSTS:
        hosts.append(_host_port(listen.host, str(listen.port)))
    for name in listen.allowed_hosts:
        hosts.append(name)
        if ":" not in name.removeprefix("[").split("]")[-1]:
            hosts.append(f"{name}:*")  # a name without a port: any port (a proxy may add one)
    origins.extend(listen.allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


async def request_body_limit(server: MCPServer[Any]) -> int:
    """Bytes of the largest valid tool call (never below the SDK's default limit)."""
    tools = await server.list_tools()
    largest = max(largest_json_bytes(tool.input_schema, tool.name) for tool in tools)
    return max(DEFAULT_MAX_REQUEST_BODY_SIZE, largest + ENVELOPE_BYTES)


def warn_about_exposure(listen: Listen, security: TransportSecuritySettings) -> None:
    """Say on stderr what a listener beyond loopback exposes, and who it answers."""
    log.info("HTTP requests are answered for Host %s", ", ".join(security.allowed_hosts))
    if not listen.beyond_loopback:
        return
    log.warning(
        "\n"
        "  ************************************************************************\n"
        "  WARNING: serving on %s:%d over plain HTTP. The bearer tokens and every\n"
        "  escalation cross the network unencrypted. Put a TLS reverse proxy in\n"
        "  front and listen on 127.0.0.1 only (see docs/security.md).\n"
        "  ************************************************************************",
        listen.host,
        listen.port,
    )
    if listen.host in WILDCARD_HOSTS and not listen.allowed_hosts:
        log.warning(
            "--host %s: only requests with a loopback Host header are answered; give the "
            "name clients use with --allowed-host NAME[:PORT]",
            listen.host or "(all)",
        )
