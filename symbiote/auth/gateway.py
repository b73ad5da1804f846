"""Everything behind the health routes: the MCP endpoints, and in `oauth` mode the SDK's OAuth routes.

The SDK builds its authorization-server routes, protected-resource metadata and bearer-token
middleware for one fixed issuer URL. A deployed Symbiote is reached by whatever name its proxy
forwards (a Function's default host, a Container App's FQDN, a custom domain), so the gateway
resolves the public origin of each request (`symbiote.auth.origin`) and serves it from an app
built for that origin with the SDK's own pieces:

- `create_auth_routes`: RFC 8414 metadata, `/authorize`, `/token` (PKCE S256), `/register`
  (RFC 7591), `/revoke` (RFC 7009); the token and revocation endpoints authenticate clients
  against secrets stored as digests (`HashedSecretAuthenticator`);
- `create_protected_resource_routes`: RFC 9728 metadata for `<origin>/mcp`;
- `AuthenticationMiddleware` + `BearerAuthBackend` (tokens bound to this origin's resource) +
  `AuthContextMiddleware`, and `RequireAuthMiddleware` on `/mcp`, the legacy SSE pair and memory
  links: 401 with the `WWW-Authenticate: Bearer ... resource_metadata=...` challenge.

In `none` mode the same gateway serves the endpoints unprotected (loopback only, see `policy`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Callable
from urllib.parse import urlsplit

from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import ProviderTokenVerifier
from mcp.server.auth.routes import (
    REVOCATION_PATH,
    TOKEN_PATH,
    _body_limited,
    _cors,
    build_resource_metadata_url,
    create_auth_routes,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from symbiote.auth.consent import ConsentEndpoint
from symbiote.auth.origin import OriginResolver, current_origin
from symbiote.auth.owner import OwnerSecret, SignInLimiter
from symbiote.auth.provider import SCOPE, HashedSecretAuthenticator, SymbioteOAuthProvider
from symbiote.auth.store import AuthStore, AuthStoreUnavailable
from symbiote.platform_hosts import is_loopback

log = logging.getLogger("symbiote.auth")
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
MAX_ORIGINS = 32


class AuthGateway:
    """ASGI app behind the health routes: finds the request's origin, serves that origin's app."""

    def __init__(
        self,
        *,
        mode: str,
        resolver: OriginResolver,
        endpoints: list[BaseRoute],
        store: AuthStore | None = None,
        owner: OwnerSecret | None = None,
        limiter: SignInLimiter | None = None,
        access_ttl: int = 3600,
        refresh_ttl: int = 30 * 86400,
    ) -> None:
        self.mode = mode
        self.resolver = resolver
        self.endpoints = endpoints
        self.store = store
        self.owner = owner
        self.limiter = limiter
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self._apps: OrderedDict[str, ASGIApp] = OrderedDict()
        self._open_app: ASGIApp = Starlette(routes=endpoints)
        if mode == "oauth":
            assert store is not None and owner is not None and limiter is not None
            self.consent = ConsentEndpoint(store, owner, limiter, resolver.trust_forwarded)

    def _app_for(self, origin: str) -> ASGIApp:
        app = self._apps.get(origin)
        if app is None:
            app = self._build(origin)
            self._apps[origin] = app
            while len(self._apps) > MAX_ORIGINS:
                self._apps.popitem(last=False)
        else:
            self._apps.move_to_end(origin)
        return app

    def _build(self, origin: str) -> ASGIApp:
        assert self.store is not None
        issuer = _URL.validate_python(origin)
        resource = _URL.validate_python(f"{origin}/mcp")
        provider = SymbioteOAuthProvider(self.store, origin, access_ttl=self.access_ttl, refresh_ttl=self.refresh_ttl)
        routes: list[BaseRoute] = []
        authenticator = HashedSecretAuthenticator(provider)  # type: ignore[arg-type]
        for route in create_auth_routes(
            provider=provider,  # type: ignore[arg-type]
            issuer_url=issuer,
            client_registration_options=ClientRegistrationOptions(enabled=True, default_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
        ):
            if route.path == TOKEN_PATH:
                handler = TokenHandler(provider, authenticator)  # type: ignore[arg-type]
                route = Route(
                    TOKEN_PATH,
                    endpoint=_cors(_body_limited(request_response(handler.handle)), ["POST", "OPTIONS"]),
                    methods=["POST", "OPTIONS"],
                )
            elif route.path == REVOCATION_PATH:
                revoker = RevocationHandler(provider, authenticator)  # type: ignore[arg-type]
                route = Route(
                    REVOCATION_PATH,
                    endpoint=_cors(_body_limited(request_response(revoker.handle)), ["POST", "OPTIONS"]),
                    methods=["POST", "OPTIONS"],
                )
            routes.append(route)
        resource_routes = create_protected_resource_routes(
            resource_url=resource, authorization_servers=[issuer], scopes_supported=[SCOPE], resource_name="Symbiote memory"
        )
        routes += resource_routes
        # Clients that look for the metadata at the root (an older discovery order) find it too.
        routes += [Route("/.well-known/oauth-protected-resource", endpoint=r.app, methods=["GET", "OPTIONS"]) for r in resource_routes if isinstance(r, Route)]
        routes.append(Route("/oauth/consent", endpoint=self.consent.__call__, methods=["GET", "POST"]))
        metadata_url = build_resource_metadata_url(resource)
        routes += protect_routes(self.endpoints, lambda app: RequireAuthMiddleware(app, [], metadata_url))
        backend = BearerAuthBackend(ProviderTokenVerifier(provider), resource_server_url=resource)  # type: ignore[arg-type]
        return Starlette(
            routes=routes,
            middleware=[Middleware(AuthenticationMiddleware, backend=backend), Middleware(AuthContextMiddleware)],
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await PlainTextResponse("Not found", status_code=404)(scope, receive, send)
            return
        origin = self.resolver(scope)
        if self.mode == "oauth":
            if origin is None:
                await PlainTextResponse("Invalid Host header", status_code=421)(scope, receive, send)
                return
            parts = urlsplit(origin)
            if parts.scheme != "https" and not is_loopback(parts.hostname or ""):
                await JSONResponse(
                    {
                        "error": "invalid_request",
                        "error_description": (
                            "OAuth needs HTTPS: reach this server over https (behind a TLS proxy, with "
                            "SYMBIOTE_TRUST_FORWARDED_HEADERS=1) or set SYMBIOTE_PUBLIC_URL."
                        ),
                    },
                    status_code=400,
                )(scope, receive, send)
                return
            app = self._app_for(origin)
        else:
            app = self._open_app
        token = current_origin.set(origin)
        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, receive, tracking_send)
        except AuthStoreUnavailable as exc:
            log.error("%s", exc)
            if started:
                raise
            await JSONResponse(
                {"error": "temporarily_unavailable", "error_description": str(exc)}, status_code=503
            )(scope, receive, send)
        finally:
            current_origin.reset(token)


def protect_routes(routes: list[BaseRoute], guard: Callable[[ASGIApp], ASGIApp]) -> list[BaseRoute]:
    """The same routes with `guard` (RequireAuthMiddleware) in front of each."""
    guarded: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, Route):
            guarded.append(Route(route.path, endpoint=guard(route.app), methods=list(route.methods or []) or None, name=route.name))
        elif isinstance(route, Mount):
            guarded.append(Mount(route.path, app=guard(route.app), name=route.name))
        else:  # pragma: no cover - nothing else is mounted behind the gateway
            raise TypeError(f"cannot protect {route!r}")
    return guarded
