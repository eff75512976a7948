"""The composition root: settings in, a wired ``MCPServer`` out (no module-level globals)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer

from ... import __version__
from ...clock import Clock, utc_now
from ...datafiles import data_dir
from ...prompts import PromptBook
from ...services.background import alongside
from ...services.runtime import Runtime, open_runtime, prompt_book
from ...settings import Settings
from ..mcp.context import AppContext, LiveRuntimes

if TYPE_CHECKING:
    from ..http.auth import TokenBook
    from .operator_side import OperatorSide

log = logging.getLogger(__name__)

INSTRUCTIONS = data_dir("prompts") / "server_instructions.md"
RELAY_START_SECONDS = 0.5


def build_server(
    settings: Settings,
    clock: Clock = utc_now,
    *,
    http: bool = False,
    tokens: TokenBook | None = None,
    hook_relay: bool = False,
) -> MCPServer[AppContext]:
    """The MCP server for ``settings``: tools wired to services on the settings' store.

    With ``http`` every request must carry a bearer token (one of ``tokens``, else of those
    the environment configures), and the token, not ``settings.role``, decides the caller's
    role. With ``hook_relay`` (``serve`` sets it)
    the process also answers the store's host hooks (``hooks/relay_server.py``).
    """
    from ..mcp.scope_gate import ScopeGate  # noqa: PLC0415
    from ..mcp.surfaces import register_prompts, register_resources  # noqa: PLC0415
    from ..mcp.task_waits import WaitAsTask  # noqa: PLC0415
    from ..mcp.tools import build_tools  # noqa: PLC0415
    from ..mcp.waits import WaitFitting  # noqa: PLC0415
    from .operator_side import OperatorSide  # noqa: PLC0415

    # Fail at start-up, not at the first call, when the prompt set is broken.
    prompts = prompt_book(settings)
    live = LiveRuntimes()
    side = OperatorSide(settings, prompts, http=http)
    lifespan = _lifespan(settings, clock, prompts, live, side, hook_relay=hook_relay)
    # The wait for a human as an MCP task, for clients that declare the tasks extension.
    tasks = WaitAsTask(side.asker, http=http, role=settings.role)
    server: MCPServer[AppContext] = MCPServer(
        "mcp-server-escalation",
        version=__version__,
        instructions=INSTRUCTIONS.read_text(encoding="utf-8"),
        lifespan=lifespan,
        log_level="WARNING",
        tools=build_tools(settings, prompts, http=http),
        # Outermost over HTTP, the token's scope: nothing of a request runs before it is
        # checked. Then the waits fitted to the connection hold for everything the call runs.
        middleware=[
            *([ScopeGate()] if http else []),
            WaitFitting(settings.waiting, http=http),
            *side.middleware,
        ],
        subscriptions=side.bus,
        extensions=[tasks],
        **(_bearer_tokens(tokens) if http else {}),
    )
    tasks.server = server
    side.clients.install(server)
    register_resources(server, prompts, live)
    register_prompts(server, prompts)
    return server


def _lifespan(
    settings: Settings,
    clock: Clock,
    prompts: PromptBook,
    live: LiveRuntimes,
    side: OperatorSide,
    *,
    hook_relay: bool,
) -> Callable[[MCPServer[AppContext]], AbstractAsyncContextManager[AppContext]]:
    """What every session of the server runs in: its runtime (store, prompts, clock), the
    operator side and, when asked, the hook relay."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with open_runtime(settings, clock, prompts) as runtime:
            # Which store and config a host-launched server took, in its log: a server without
            # the config its operator meant would otherwise notify nobody without a word.
            log.info(
                "store %s open (role %s); config %s",
                settings.db_path,
                settings.role,
                settings.config_path or "none (no --config, ESCALATION_CONFIG or per-user file)",
            )
            live.open.append(runtime)
            try:
                async with side.running(runtime), _hook_relay(runtime, enabled=hook_relay):
                    yield AppContext(runtime=runtime, settings=settings)
            finally:
                live.open.remove(runtime)

    return lifespan


def _bearer_tokens(tokens: TokenBook | None) -> dict[str, Any]:
    """Over HTTP every request carries a bearer token, and the token decides the role."""
    from ..http.auth import StaticTokenVerifier, auth_settings, load_tokens  # noqa: PLC0415

    book = load_tokens() if tokens is None else tokens
    return {"token_verifier": StaticTokenVerifier(book), "auth": auth_settings()}


@asynccontextmanager
async def _hook_relay(runtime: Runtime, *, enabled: bool) -> AsyncIterator[None]:
    """The store's hook relay, started once the server has answered its first requests."""
    if not enabled:
        yield
        return

    async def serve_later() -> None:
        # Loading the relay costs ~5 ms: not before the client's initialize is answered.
        await anyio.sleep(RELAY_START_SECONDS)
        from ...hooks.relay_server import relay  # noqa: PLC0415

        try:
            async with relay(runtime):
                await anyio.sleep_forever()
        except Exception:  # hooks then run on their own; the MCP session must go on
            log.exception("hook relay stopped")

    async with alongside(serve_later):
        yield
