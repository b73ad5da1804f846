"""Symbiote as the OAuth 2.1 authorization server for its single owner, on the MCP SDK's interfaces.

`SymbioteOAuthProvider` implements the SDK's `OAuthAuthorizationServerProvider` for one public
origin (the issuer); all origins share one `AuthStore`. The SDK's handlers do the protocol work
(metadata, registration, PKCE S256 checks, redirect-URI checks, token and revocation endpoints);
this class decides what is stored and when a code may be minted: only after the owner approves
on the consent page (`symbiote.auth.consent`).

RFC 8707: an authorization names one of this origin's resources (`symbiote.auth.resources`:
`/mcp`, `/sse` or the origin; `/mcp` when it names none) and its tokens are for that one. At
`/token` the SDK's handler reads a `resource` but does not hand it on, so `TokenEndpoint` passes it
to the provider (`requested_resource`), which refuses a code or refresh exchange naming another
server's resource with `invalid_target`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import anyio.to_thread
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from symbiote.auth.auth_store import API_KEY_PREFIX, AuthStore
from symbiote.auth.client_metadata import ClientMetadataDocuments, ClientMetadataError, is_metadata_url
from symbiote.auth.overflow import OverflowTickets
from symbiote.auth.resources import Resources
from symbiote.platform_hosts import is_loopback

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger("symbiote.auth")

SCOPE = "memory"  # one owner, one permission: the whole memory
FORBIDDEN_REDIRECT_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob"})


# The `resource` of the `/token` request being handled (None: the request names none).
requested_resource: ContextVar[str | None] = ContextVar("requested_resource", default=None)


def _check_target(granted: str | None) -> None:
    """RFC 8707 §2: a token request may name only a resource of the server the authorization is for."""
    requested = requested_resource.get()
    if requested is None or granted is None:
        return
    if Resources.of(granted).named(requested) is None:
        raise TokenError("invalid_target", f"This authorization is for {granted} only")


class TokenEndpoint(TokenHandler):
    """The SDK's `/token`, with the request's `resource` handed to the provider for the exchange."""

    async def handle(self, request: Request) -> Response:
        resource = (await request.form()).get("resource")  # Starlette keeps the form for the SDK's read
        token = requested_resource.set(resource if isinstance(resource, str) and resource.strip() else None)
        try:
            response: Response = await super().handle(request)
        finally:
            requested_resource.reset(token)
        return response


class SymbioteClient(OAuthClientInformationFull):
    """A registered client, with the server's own rules for scopes and loopback redirects."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        # Scopes carry no meaning for a single-owner memory (clients send anything from nothing to
        # "claudeai" or "read write"): every grant is the whole memory, reported as scope "memory".
        return [SCOPE]

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        chosen = self._registered_redirect(redirect_uri)
        problem = redirect_uri_problem(chosen)  # also for a client registered before a rule was added
        if problem:
            raise InvalidRedirectUriError(problem)  # an error page: the browser is never sent there
        return chosen

    def _registered_redirect(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is not None and self.redirect_uris and redirect_uri not in self.redirect_uris:
            # RFC 8252 §7.3: a native app's loopback redirect may use any port.
            if redirect_uri.scheme == "http" and is_loopback(redirect_uri.host or ""):
                for registered in self.redirect_uris:
                    if (
                        registered.scheme == "http"
                        and registered.host == redirect_uri.host
                        and registered.path == redirect_uri.path
                        and registered.query == redirect_uri.query
                    ):
                        return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


def redirect_uri_problem(uri: AnyUrl) -> str | None:
    """OAuth 2.1 §2.3.1 / RFC 8252: https, http on loopback, or an app's private-use scheme."""
    scheme = (uri.scheme or "").lower()
    if uri.fragment is not None:
        return f"redirect URI {uri} must not have a fragment"
    if uri.username is not None or uri.password is not None:  # https://claude.ai@evil.example/ goes to evil.example
        return f"redirect URI {uri} must not have a user name or password before its host"
    if scheme == "https":
        return None
    if scheme == "http":
        return None if is_loopback(uri.host or "") else f"redirect URI {uri} must use https (http only on loopback)"
    if scheme in FORBIDDEN_REDIRECT_SCHEMES:
        return f"redirect URI scheme {scheme!r} is not allowed"
    return None  # a private-use scheme such as cursor:// or vscode://


class SymbioteOAuthProvider:
    """The SDK's provider protocol for one origin, over the shared store."""

    def __init__(
        self,
        store: AuthStore,
        origin: str,
        *,
        access_ttl: int,
        refresh_ttl: int,
        documents: ClientMetadataDocuments | None = None,
        overflow: OverflowTickets | None = None,
    ) -> None:
        """`documents`: resolve `client_id`s that are HTTPS URLs (Client ID Metadata Documents).
        `overflow`: carries sign-ins that find the waiting ones full, for the owner to approve."""
        self.store = store
        self.documents = documents
        self.overflow = overflow
        self.origin = origin
        self.resources = Resources(origin)
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A call of the auth store, in a worker thread (SQLite blocks)."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    # -- clients --------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> SymbioteClient | None:
        if self.documents is not None and is_metadata_url(client_id):
            return await self._document_client(client_id)
        found = await self._run(self.store.get_client, client_id)
        if found is None:
            return None
        info, secret_hash = found
        return SymbioteClient.model_validate({**info, "client_secret": secret_hash})

    async def _document_client(self, url: str) -> SymbioteClient | None:
        """A public client described by its metadata document; None (an unknown client) if refused."""
        assert self.documents is not None
        try:
            document = await self.documents.document(url)
            problems = [redirect_uri_problem(AnyUrl(uri)) for uri in document["redirect_uris"]]
            problem = next((p for p in problems if p), None)
            if problem:
                raise ClientMetadataError(problem)
            return SymbioteClient.model_validate(
                {
                    **document,
                    "client_id": url,
                    "token_endpoint_auth_method": "none",
                    "client_secret": None,
                    "scope": SCOPE,
                }
            )
        except (ClientMetadataError, ValidationError, ValueError) as exc:
            log.warning("client %s refused: %s", url, exc)
            return None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            problem = redirect_uri_problem(uri)
            if problem:
                raise RegistrationError("invalid_redirect_uri", problem)
        if client_info.scope is None or SCOPE not in client_info.scope.split():
            client_info.scope = SCOPE if client_info.scope is None else f"{client_info.scope} {SCOPE}"
        info = client_info.model_dump(mode="json", exclude={"client_secret"}, exclude_none=True)
        if not await self._run(self.store.register_client, client_info.client_id, info, client_info.client_secret):
            raise RegistrationError(
                "invalid_client_metadata", "Too many registrations are waiting for the owner's approval; try later."
            )

    # -- authorization --------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """No code yet: park the request and send the browser to the owner's consent page."""
        resource = self.resources.named(params.resource) if params.resource else self.resources.default
        if resource is None:
            raise AuthorizeError("invalid_target", f"This server only issues tokens for its own URLs ({self.origin})")
        pending = {
            "state": params.state,
            "scopes": [SCOPE],
            "code_challenge": params.code_challenge,
            "redirect_uri": str(params.redirect_uri),
            "redirect_uri_provided_explicitly": params.redirect_uri_provided_explicitly,
            "resource": resource,
            "origin": self.origin,
            "client_name": client.client_name,  # a metadata-document client is in no table: show its name
        }
        ticket = await self._run(self.store.add_pending, client.client_id, pending)
        if ticket is None and self.overflow is not None:  # the owner secret jumps the queue; nothing is stored
            ticket = self.overflow.issue(client.client_id, pending)
        if ticket is None:
            raise AuthorizeError("temporarily_unavailable", "Too many sign-ins are waiting for the owner; try later.")
        return f"{self.origin}/oauth/consent?ticket={ticket}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found = await self._run(self.store.load_code, authorization_code)
        if found is None:
            return None
        client_id, data, expires_at = found
        return AuthorizationCode(
            code=authorization_code,
            scopes=data["scopes"],
            expires_at=expires_at,
            client_id=client_id,
            code_challenge=data["code_challenge"],
            redirect_uri=AnyUrl(data["redirect_uri"]),
            redirect_uri_provided_explicitly=data["redirect_uri_provided_explicitly"],
            resource=data["resource"],
            subject="owner",
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        _check_target(authorization_code.resource)
        issued = await self._run(
            lambda: self.store.exchange_code(
                authorization_code.code,
                client.client_id,
                authorization_code.scopes,
                authorization_code.resource,
                self.access_ttl,
                self.refresh_ttl,
            )
        )
        if issued is None:
            raise TokenError("invalid_grant", "authorization code was already used or has expired")
        return OAuthToken(
            access_token=issued.access_token,
            expires_in=issued.access_expires_in,
            scope=" ".join(issued.scopes),
            refresh_token=issued.refresh_token,
        )

    # -- tokens ---------------------------------------------------------------------------------

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        record = await self._run(self.store.load_refresh, refresh_token)
        if record is None or record.client_id != client.client_id:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=int(record.expires_at),
            resource=record.resource,
            subject="owner",
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        _check_target(refresh_token.resource)
        issued = await self._run(
            lambda: self.store.rotate_refresh(refresh_token.token, scopes, self.access_ttl, self.refresh_ttl)
        )
        if issued is None:
            raise TokenError("invalid_grant", "refresh token was already used, revoked or has expired")
        return OAuthToken(
            access_token=issued.access_token,
            expires_in=issued.access_expires_in,
            scope=" ".join(issued.scopes),
            refresh_token=issued.refresh_token,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        if token.startswith(API_KEY_PREFIX):
            key = await self._run(self.store.check_api_key, token)
            if key is None:
                return None
            # An API key is good on every origin this server answers on.
            return AccessToken(
                token=token,
                client_id=f"apikey:{key.key_id}",
                scopes=[SCOPE],
                resource=self.resources.default,
                subject="owner",
            )
        record = await self._run(self.store.load_token, token, "access")
        if record is None:
            return None
        return AccessToken(
            token=token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=int(record.expires_at),
            resource=record.resource,
            subject="owner",
            claims={"iss": self.origin},
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """Revoking either token ends the whole grant: its access and refresh tokens together."""
        for kind in ("access", "refresh"):
            record = await self._run(self.store.load_token, token.token, kind)
            if record is not None:
                await self._run(self.store.revoke_grant, record.grant_id)
                return

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "The JWT bearer grant is not supported by this authorization server")
