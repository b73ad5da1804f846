"""Who may connect: Symbiote's own OAuth 2.1 authorization server for its single owner, and API keys.

- `policy`: the mode (`none` on loopback only, `oauth` elsewhere) and the configurations refused.
- `store`: clients, consents, codes, tokens and API keys in SQLite, credentials stored as digests.
- `provider`: the MCP SDK's `OAuthAuthorizationServerProvider` over the store.
- `consent`: the owner-secret consent page, the only place a code is minted.
- `owner`: the owner secret (scrypt, constant-time compare) and the sign-in rate limiter.
- `origin`: the public origin of a request (forwarded headers or SYMBIOTE_PUBLIC_URL).
- `resources`: the protected resources of one origin (`/mcp`, `/sse`, the origin) and their metadata URLs.
- `gateway`: the SDK's auth routes and middleware, per public origin, in front of `/mcp` and `/sse`.

This is the package's door: other packages import from `symbiote.auth`, never from a module inside
it (tests/test_layers.py checks). What is imported here is light (no MCP SDK), so that `symbiote keys`
and the console's sign-out read the store without loading the server; `gateway`, which brings the
SDK's auth routes, is let out whole and imported where the HTTP app is built.
"""

from symbiote.auth.auth_store import AUTH_DB_NAME, AuthStore, AuthStoreUnavailable, default_auth_db
from symbiote.auth.origin import OriginResolver, address_key, client_address, current_origin, forwarded_client
from symbiote.auth.owner import OwnerChecks, OwnerSecret, SignInLimiter, hash_secret
from symbiote.auth.policy import AuthRefused, chatgpt_tools_enabled, enforce, resolve_mode
from symbiote.auth.resources import LEGACY_SSE, ORIGIN, STREAMABLE

__all__ = [
    "AUTH_DB_NAME",
    "LEGACY_SSE",
    "ORIGIN",
    "STREAMABLE",
    "AuthRefused",
    "AuthStore",
    "AuthStoreUnavailable",
    "OriginResolver",
    "OwnerChecks",
    "OwnerSecret",
    "SignInLimiter",
    "address_key",
    "chatgpt_tools_enabled",
    "client_address",
    "current_origin",
    "default_auth_db",
    "enforce",
    "forwarded_client",
    "gateway",
    "hash_secret",
    "resolve_mode",
]
