"""Everything behind the health routes: the MCP endpoints, and in `oauth` mode the SDK's OAuth routes.

The SDK builds its authorization-server routes, protected-resource metadata and bearer-token
middleware for one fixed issuer URL. A deployed Symbiote is reached by whatever name its proxy
forwards (a Function's default host, a Container App's FQDN, a custom domain), so the gateway
resolves the public origin of each request (`symbiote.auth.origin`) and serves it from an app
built for that origin with the SDK's own pieces and ours:

- RFC 8414 metadata (advertising Client ID Metadata Documents, public clients and RFC 9207 `iss`
  in every authorization response: `symbiote.auth.issuer`), `/authorize` (per-address budget),
  `/token` (PKCE S256) and `/revoke` (RFC 7009, `symbiote.auth.revocation`)
  with client authentication for every client type (`symbiote.auth.client_auth`), and `/register`
  (RFC 7591, size limits and budgets: `symbiote.auth.registration`) unless open registration is
  off; a `client_id` that is an HTTPS URL is resolved from its metadata document
  (`symbiote.auth.client_metadata`);
- `create_protected_resource_routes`: RFC 9728 metadata for each of the origin's resources
  (`symbiote.auth.resources`: `<origin>/mcp`, `<origin>/sse` and the origin itself, at the root);
- `AuthenticationMiddleware` + `BearerAuthBackend` (tokens issued for one of this origin's
  resources, `OwnTokens`) + `AuthContextMiddleware`, and `RequireToken` (`symbiote.auth.challenge`)
  on `/mcp`, the legacy SSE pair and memory links: the RFC 6750 challenge naming the metadata of
  the resource the route belongs to. Only then is the request's body read (`after_auth`: the full
  body cap).

In `none` mode the same gateway serves the endpoints unprotected (loopback only, see `policy`).
"""

from __future__ import annotations

import contextvars
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import (
    AUTHORIZATION_PATH,
    REGISTRATION_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    _body_limited,
    _cors,
    build_metadata,
    cors_middleware,
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

from symbiote.auth.auth_store import AuthStore, AuthStoreUnavailable
from symbiote.auth.challenge import RequireToken
from symbiote.auth.client_auth import HashedSecretAuthenticator
from symbiote.auth.client_metadata import ClientMetadataDocuments
from symbiote.auth.consent import ConsentEndpoint
from symbiote.auth.issuer import IssuerOnErrors, advertise_issuer_parameter
from symbiote.auth.origin import OriginResolver, address_key, client_address, current_origin
from symbiote.auth.overflow import OverflowTickets
from symbiote.auth.owner import OwnerChecks
from symbiote.auth.provider import SCOPE, SymbioteOAuthProvider, TokenEndpoint
from symbiote.auth.rates import Budgeted, RateBudget
from symbiote.auth.registration import LimitedRegistration
from symbiote.auth.resources import PATHS, Resources
from symbiote.auth.revocation import Revocation
from symbiote.platform_hosts import is_loopback

log = logging.getLogger("symbiote.auth")
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
MAX_ORIGINS = 32
AUTHORIZE_PER_MINUTE = 30  # authorization requests one address may park per minute
CLIENT_AUTH_METHODS = ["client_secret_post", "client_secret_basic", "none"]

# The address of the request being served (an IPv4 address or IPv6 /64), for the budgets.
current_address: contextvars.ContextVar[str] = contextvars.ContextVar("symbiote_address", default="unknown")


@dataclass(frozen=True)
class OAuthOptions:
    """The authorization server's settings (SYMBIOTE_* in docs/auth.md)."""

    access_ttl: int = 3600
    refresh_ttl: int = 30 * 86400
    open_registration: bool = True
    registrations_per_minute: int = 10  # per address
    registrations_per_hour: int = 100  # in total
    client_metadata_documents: bool = True
    metadata_loopback: bool = False  # tests only: metadata documents served on loopback


class AuthGateway:
    """ASGI app behind the health routes: finds the request's origin, serves that origin's app."""

    def __init__(
        self,
        *,
        mode: str,
        resolver: OriginResolver,
        endpoints: Mapping[str, list[BaseRoute]],
        store: AuthStore | None = None,
        checks: OwnerChecks | None = None,
        options: OAuthOptions = OAuthOptions(),
        after_auth: Callable[[ASGIApp], ASGIApp] = lambda app: app,
    ) -> None:
        """`endpoints`: the routes a token opens, by the path of the resource they belong to
        (`symbiote.auth.resources`). `after_auth` wraps each behind the token check (the full
        request body cap)."""
        self.mode = mode
        self.resolver = resolver
        self.endpoints = endpoints
        self.store = store
        self.checks = checks
        self.options = options
        self.after_auth = after_auth
        self._apps: OrderedDict[str, ASGIApp] = OrderedDict()
        self._open_app: ASGIApp = Starlette(
            routes=[route for routes in endpoints.values() for route in protect_routes(routes, after_auth)]
        )
        if mode == "oauth":
            assert store is not None and checks is not None
            self.overflow = OverflowTickets()  # sign-ins past the cap on waiting ones, for the owner to approve
            self.consent = ConsentEndpoint(store, checks, resolver.trust_forwarded, self.overflow)
            self.registrations = RateBudget(
                options.registrations_per_minute, 60.0, options.registrations_per_hour, 3600.0
            )
            self.authorizations = RateBudget(AUTHORIZE_PER_MINUTE, 60.0)
            self.documents = (
                ClientMetadataDocuments(
                    allow_loopback=options.metadata_loopback,
                    admit=lambda: self.registrations.admit(current_address.get()),
                )
                if options.client_metadata_documents
                else None
            )

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
        resources = Resources(origin)
        provider = SymbioteOAuthProvider(
            self.store,
            origin,
            access_ttl=self.options.access_ttl,
            refresh_ttl=self.options.refresh_ttl,
            documents=self.documents,
            overflow=self.overflow,
        )
        routes = self._server_routes(provider, issuer)
        for path in PATHS:
            routes += create_protected_resource_routes(
                resource_url=_URL.validate_python(resources.url(path)),
                authorization_servers=[issuer],
                scopes_supported=[SCOPE],
                resource_name="Symbiote memory",
            )
        routes.append(Route("/oauth/consent", endpoint=self.consent.__call__, methods=["GET", "POST"]))
        for path, endpoints in self.endpoints.items():
            routes += protect_routes(endpoints, self._guard(resources.metadata_url(path)))
        backend = BearerAuthBackend(OwnTokens(provider, resources))
        return Starlette(
            routes=routes,
            middleware=[Middleware(AuthenticationMiddleware, backend=backend), Middleware(AuthContextMiddleware)],
        )

    def _guard(self, metadata_url: str) -> Callable[[ASGIApp], ASGIApp]:
        """The token check in front of an endpoint of the resource described at `metadata_url`."""
        return lambda app: RequireToken(self.after_auth(app), metadata_url)

    def _server_routes(self, provider: SymbioteOAuthProvider, issuer: AnyHttpUrl) -> list[BaseRoute]:
        """The authorization server's endpoints: the SDK's, with ours where the SDK falls short."""
        registration = ClientRegistrationOptions(enabled=self.options.open_registration, default_scopes=[SCOPE])
        revocation = RevocationOptions(enabled=True)
        metadata = build_metadata(issuer, None, registration, revocation)
        metadata.client_id_metadata_document_supported = self.documents is not None or None
        metadata.token_endpoint_auth_methods_supported = CLIENT_AUTH_METHODS
        metadata.revocation_endpoint_auth_methods_supported = CLIENT_AUTH_METHODS
        advertise_issuer_parameter(metadata)
        authenticator = HashedSecretAuthenticator(provider)
        sdk_routes = {
            route.path: route
            for route in create_auth_routes(
                provider=provider,
                issuer_url=issuer,
                client_registration_options=registration,
                revocation_options=revocation,
            )
        }

        def post(path: str, handle: Callable[..., Any]) -> Route:
            endpoint = _cors(_body_limited(request_response(handle)), ["POST", "OPTIONS"])
            return Route(path, endpoint=endpoint, methods=["POST", "OPTIONS"])

        describe = cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"])
        authorize = Budgeted(
            IssuerOnErrors(sdk_routes[AUTHORIZATION_PATH].app, provider.origin),
            self.authorizations,
            "authorization requests",
            current_address.get,
        )
        routes: list[BaseRoute] = [
            Route("/.well-known/oauth-authorization-server", endpoint=describe, methods=["GET", "OPTIONS"]),
            Route(AUTHORIZATION_PATH, endpoint=authorize, methods=["GET", "POST"]),
            post(TOKEN_PATH, TokenEndpoint(provider, authenticator).handle),
            post(REVOCATION_PATH, Revocation(provider, authenticator).handle),
        ]
        if self.options.open_registration:
            handler = RegistrationHandler(provider, options=registration)
            limited = LimitedRegistration(handler, self.registrations, self.resolver.trust_forwarded)
            routes.append(post(REGISTRATION_PATH, limited.handle))
        return routes

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
        address = current_address.set(address_key(client_address(scope, self.resolver.trust_forwarded)))
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
            await JSONResponse({"error": "temporarily_unavailable", "error_description": str(exc)}, status_code=503)(
                scope, receive, send
            )
        finally:
            current_origin.reset(token)
            current_address.reset(address)


class OwnTokens(TokenVerifier):
    """The provider's tokens that were issued for one of `resources` (RFC 8707 audience): a token
    for another origin or server is refused like an unknown one."""

    def __init__(self, provider: SymbioteOAuthProvider, resources: Resources) -> None:
        self.provider = provider
        self.resources = resources

    async def verify_token(self, token: str) -> AccessToken | None:
        found = await self.provider.load_access_token(token)
        if found is None:
            return None
        if self.resources.named(found.resource) is None:
            log.warning("bearer token for %r refused on %s", found.resource, self.resources.origin)
            return None
        return found


def protect_routes(routes: list[BaseRoute], guard: Callable[[ASGIApp], ASGIApp]) -> list[BaseRoute]:
    """The same routes with `guard` (RequireAuthMiddleware) in front of each."""
    guarded: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, Route):
            guarded.append(
                Route(route.path, endpoint=guard(route.app), methods=list(route.methods or []) or None, name=route.name)
            )
        elif isinstance(route, Mount):
            guarded.append(Mount(route.path, app=guard(route.app), name=route.name))
        else:  # pragma: no cover - nothing else is mounted behind the gateway
            raise TypeError(f"cannot protect {route!r}")
    return guarded
