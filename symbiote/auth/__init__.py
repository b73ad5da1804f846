"""Who may connect: Symbiote's own OAuth 2.1 authorization server for its single owner, and API keys.

- `policy`: the mode (`none` on loopback only, `oauth` elsewhere) and the configurations refused.
- `store`: clients, consents, codes, tokens and API keys in SQLite, credentials stored as digests.
- `provider`: the MCP SDK's `OAuthAuthorizationServerProvider` over the store.
- `consent`: the owner-secret consent page, the only place a code is minted.
- `owner`: the owner secret (scrypt, constant-time compare) and the sign-in rate limiter.
- `origin`: the public origin of a request (forwarded headers or SYMBIOTE_PUBLIC_URL).
- `gateway`: the SDK's auth routes and middleware, per public origin, in front of `/mcp`.
"""
