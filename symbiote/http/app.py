"""The HTTP face of Symbiote: streamable HTTP at /mcp, legacy SSE, health, and who may connect.

`/mcp` is stateless with JSON responses: every POST is self-contained, so any number of
clients (and the Azure Functions adapter, which buffers whole responses) work without
sticky sessions; `GET /mcp` (a server-push stream we never use) is answered 405. The legacy
SSE pair (`GET /sse`, `POST /messages/{session_id}`, see `symbiote.http.sse`) stays for older
clients. `settings.transport` picks what is served: `http` (the default) both, `sse` only the
legacy pair. Around everything: header values without the whitespace around them
(`symbiote.http.headers`), the request body cap and CORS (`symbiote.http.limits`).

Health (`/`, `/health`) is always public and reveals nothing private. Everything else sits
behind `symbiote.auth.gateway.AuthGateway`: in `oauth` mode (the default anywhere but a
loopback bind) it serves the MCP SDK's OAuth authorization-server routes for the request's
public origin and requires a bearer token (OAuth access token or API key) on `/mcp`, the SSE
pair and memory links; in `none` mode it serves them open. See docs/auth.md. The owner's
console (`/console`, `symbiote.console`) has the same Host/Origin checks and its own sign-in
with the owner secret; a bearer token does not open it.

On a file share (SYMBIOTE_SHARE) the runtime carries the writer lease and snapshots: health
reports them, and shutting down releases the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Mount, Route

from symbiote.auth import (
    LEGACY_SSE,
    ORIGIN,
    STREAMABLE,
    AuthRefused,
    AuthStore,
    AuthStoreUnavailable,
    OriginResolver,
    OwnerChecks,
    OwnerSecret,
    SignInLimiter,
    chatgpt_tools_enabled,
    current_origin,
    default_auth_db,
    enforce,
)
from symbiote.auth.gateway import AuthGateway, OAuthOptions
from symbiote.azure import FileShare
from symbiote.config import ConfigError, Settings
from symbiote.console.console_app import console_access, create_console
from symbiote.console.state import console_state
from symbiote.http.envelope import CheckedEnvelope
from symbiote.http.headers import TrimmedHeaders
from symbiote.http.health import health_endpoint
from symbiote.http.limits import body_limits, cors_middleware
from symbiote.http.security import ForwardedClient, allowed_hosts, transport_security
from symbiote.http.sse import LegacySseTransport, SessionTable
from symbiote.mcp import memory_link_endpoint, register_chatgpt_tools
from symbiote.runtime import ModelLoader, Runtime, build_runtime

log = logging.getLogger(__name__)

# The MCP servers the ChatGPT tools are registered on: an app built twice on one runtime adds them once.
_WITH_CHATGPT_TOOLS: weakref.WeakSet[Any] = weakref.WeakSet()


def _with_public_host(settings: Settings) -> Settings:
    """SYMBIOTE_PUBLIC_URL's host is one of ours: accept it in the DNS-rebinding allow-list."""
    host = urlsplit(settings.public_url).hostname if settings.public_url else None
    if not host or host in settings.allowed_hosts:
        return settings
    return dataclasses.replace(settings, allowed_hosts=(*settings.allowed_hosts, host))


def create_app(
    settings: Settings,
    runtime: Runtime | None = None,
    *,
    warm_up: bool = True,
    periodic_snapshots: bool = False,
    share: FileShare | None = None,
    load_model: ModelLoader | None = None,
) -> Starlette:
    """The ASGI app. `warm_up` opens the store and loads the model in the background at start.

    `share` stands in for the file share SYMBIOTE_SHARE would open (tests); `load_model`, for the
    model the runtime would load (`symbiote.runtime.build_runtime`). `periodic_snapshots`
    is for `symbiote serve`, which has no timer function: a background check takes the daily
    snapshot of the file share when it is due.

    Raises ConfigError when the settings would serve memories unauthenticated on a public
    interface (see `symbiote.auth.policy`).
    """
    try:
        mode = enforce(settings)
    except AuthRefused as exc:
        raise ConfigError(str(exc)) from None
    settings = _with_public_host(settings)
    runtime = runtime or build_runtime(settings, share=share, load_model=load_model)
    mcp = runtime.server
    if chatgpt_tools_enabled(settings) and mcp not in _WITH_CHATGPT_TOOLS:
        register_chatgpt_tools(mcp, runtime.engine, current_origin.get)
        _WITH_CHATGPT_TOOLS.add(mcp)
    security = transport_security(settings)
    sessions = SessionTable()
    endpoints = _endpoints(settings, runtime, security, sessions)
    resolver = OriginResolver(settings, allowed_hosts(settings))
    # One budget and one discipline for owner-secret attempts, on the consent page and the console.
    checks = (
        OwnerChecks(OwnerSecret(settings.owner_secret, settings.owner_secret_hash), SignInLimiter())
        if mode == "oauth"
        else None
    )
    gateway, store = _gateway(settings, mode, endpoints, resolver, checks)
    console = create_console(
        runtime.engine,
        runtime.history.history if runtime.history is not None else None,
        console_access(settings, mode, resolver, security, checks, store),
        data_dir=settings.chromadb_path,
        max_body_bytes=settings.max_body_bytes,
        after_gate=body_limits(settings.max_body_bytes, mode == "oauth")[1],  # the full cap, after the session check
        trash_per_instance=bool(settings.chroma_host),
    )
    health = health_endpoint(runtime, sessions)
    routes: list[BaseRoute] = [
        Route("/", health, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/console", _to_console, methods=["GET"]),
        Mount("/console", app=console),  # the owner's console: its own sign-in, never a bearer token
        Mount("", app=gateway),
    ]
    forwarded = [Middleware(ForwardedClient)] if resolver.trust_forwarded else []
    app = Starlette(
        routes=routes,
        lifespan=_lifespan(runtime, store, warm_up, console_state(console).jobs.close),
        middleware=[
            Middleware(TrimmedHeaders),
            *forwarded,
            *cors_middleware(settings.cors_origins),
            *body_limits(settings.max_body_bytes, mode == "oauth")[0],
        ],
    )
    app.state.runtime = runtime
    app.state.sessions = sessions
    app.state.auth_mode = mode
    app.state.auth_store = store
    if periodic_snapshots and runtime.share is not None:
        runtime.share.start_periodic_snapshots()
    return app


def _endpoints(
    settings: Settings, runtime: Runtime, security: TransportSecuritySettings, sessions: SessionTable
) -> dict[str, list[BaseRoute]]:
    """What a token opens, by the resource each belongs to (`symbiote.auth.resources`): `/mcp`
    (unless `SYMBIOTE_TRANSPORT=sse`), the legacy SSE pair, memory links (the origin's)."""
    mcp = runtime.server
    streamable = mcp.streamable_http_app(  # also makes the session manager the lifespan runs
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=settings.host,
        max_request_body_size=settings.max_body_bytes,
    )
    endpoints: dict[str, list[BaseRoute]] = {}
    if settings.transport != "sse":
        mcp_endpoint = next(r.endpoint for r in streamable.routes if isinstance(r, Route) and r.path == "/mcp")
        endpoints[STREAMABLE] = [Route("/mcp", endpoint=CheckedEnvelope(mcp_endpoint), methods=["POST", "DELETE"])]
    sse = LegacySseTransport(
        mcp._lowlevel_server,
        security=security,
        sessions=sessions,
        heartbeat_seconds=settings.sse_heartbeat_seconds,
        max_lifetime_seconds=settings.sse_max_lifetime_seconds,
        sse_path=LEGACY_SSE,
    )
    endpoints[LEGACY_SSE] = sse.routes()
    link = memory_link_endpoint(runtime.engine, current_origin.get)
    endpoints[ORIGIN] = [Route("/memories/{memory_id}", endpoint=link, methods=["GET"])]
    return endpoints


def _to_console(request: Request) -> RedirectResponse:
    return RedirectResponse(f"{request.scope.get('root_path', '')}/console/", status_code=307)


def _gateway(
    settings: Settings,
    mode: str,
    endpoints: dict[str, list[BaseRoute]],
    resolver: OriginResolver,
    checks: OwnerChecks | None,
) -> tuple[AuthGateway, AuthStore | None]:
    """Who may reach `endpoints`: in `oauth` mode the gateway and the auth store behind it."""
    after_auth = body_limits(settings.max_body_bytes, mode == "oauth")[1]
    if mode != "oauth" or checks is None:
        return AuthGateway(mode=mode, resolver=resolver, endpoints=endpoints, after_auth=after_auth), None
    store = AuthStore(settings.auth_db_path or default_auth_db(settings.chromadb_path))
    gateway = AuthGateway(
        mode=mode,
        resolver=resolver,
        endpoints=endpoints,
        store=store,
        checks=checks,
        options=OAuthOptions(
            access_ttl=settings.access_token_ttl_seconds,
            refresh_ttl=settings.refresh_token_ttl_seconds,
            open_registration=settings.open_registration,
            registrations_per_minute=settings.registrations_per_minute,
            registrations_per_hour=settings.registrations_per_hour,
            client_metadata_documents=settings.client_metadata_documents,
            metadata_loopback=settings.metadata_loopback,
        ),
        after_auth=after_auth,
    )
    return gateway, store


def _lifespan(
    runtime: Runtime, store: AuthStore | None, warm_up: bool, close_imports: Callable[[], None]
) -> Callable[[Starlette], Any]:
    """Start: check the auth store, run the MCP session manager, warm up. Stop: close everything
    (`close_imports`: the console's imports and their uploads)."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if store is not None:
            try:
                await asyncio.to_thread(store.check)
            except AuthStoreUnavailable as exc:  # sign-in answers 503 saying what to fix; health stays up
                log.error("%s", exc)
        async with runtime.server.session_manager.run():
            task = asyncio.create_task(runtime.engine.warm_up()) if warm_up else None
            try:
                yield
            finally:
                if task is not None:
                    task.cancel()
                close_imports()
        runtime.close_stores()
        if store is not None:
            store.close()
        if runtime.share is not None:  # releasing the lease waits for its thread: not on the event loop
            await asyncio.to_thread(runtime.share.close)

    return lifespan
