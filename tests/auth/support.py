"""Helpers for the auth tests: a Symbiote server in oauth mode and an OAuth client written with httpx.

The client side is spelled out request by request (RFC 7591 registration, the authorization
request with PKCE S256, the owner's consent form, the token endpoint, RFC 7009 revocation) so
each test can break exactly one step. No tests live here.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.testclient import TestClient

from symbiote.config import Settings
from tests.conftest import make_app

OWNER_SECRET = "correct horse battery staple 42"
REDIRECT_URI = "http://127.0.0.1:9/callback"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
Response = httpx.Response | httpx2.Response  # a `served` app answers through httpx2 (TestClient)
IN_PROCESS = "http://127.0.0.1"  # the origin `served` apps answer on
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def oauth_env(**extra: str) -> dict[str, str]:
    """OAuth with the owner secret; registration budgets far above what a test module uses (the
    defaults are tested in tests/hardening/test_servers.py)."""
    return {
        "SYMBIOTE_AUTH": "oauth",
        "SYMBIOTE_OWNER_SECRET": OWNER_SECRET,
        "SYMBIOTE_REGISTRATIONS_PER_MINUTE": "10000",
        "SYMBIOTE_REGISTRATIONS_PER_HOUR": "100000",
        **extra,
    }


def oauth_settings(data_dir: Path, model_dir: Path, **extra: str) -> Settings:
    """`oauth_env` as Settings for the real app in this process, with Chroma in-process."""
    chosen = Settings.from_env({**oauth_env(**extra), "CHROMADB_PATH": str(data_dir)})
    return dataclasses.replace(chosen, model_dir=model_dir, store_process=False)


@contextmanager
def served(settings: Settings) -> Iterator[OAuthFlow]:
    """The real app on `settings` in this process, its lifespan run, and an OAuth client on it
    (Starlette's TestClient: httpx's own client over ASGI), from a loopback address."""
    app = make_app(settings)
    with TestClient(app, base_url=IN_PROCESS, follow_redirects=False, client=("127.0.0.1", 50000)) as http:
        http.timeout = 30  # type: ignore[assignment]
        yield OAuthFlow(IN_PROCESS, http=http)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


@dataclass
class Started:
    ticket: str
    verifier: str
    state: str


class OAuthFlow:
    """One OAuth client talking to the server with plain httpx."""

    def __init__(self, base_url: str, http: httpx.Client | httpx2.Client | None = None) -> None:
        self.base = base_url
        self.http: httpx.Client | httpx2.Client = http or httpx.Client(base_url=base_url, timeout=30)

    def close(self) -> None:
        self.http.close()

    def register(
        self, name: str = "Test client", redirect_uris: list[str] | None = None, **extra: Any
    ) -> dict[str, Any]:
        body = {"client_name": name, "redirect_uris": redirect_uris or [REDIRECT_URI], **extra}
        response = self.http.post("/register", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def start(
        self, client: dict[str, Any], *, redirect_uri: str = REDIRECT_URI, resource: str | None = None
    ) -> Started:
        verifier, challenge = pkce()
        state = secrets.token_urlsafe(16)
        params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": resource or f"{self.base}/mcp",
        }
        response = self.http.get("/authorize", params=params)
        assert response.status_code == 302, response.text
        location = response.headers["location"]
        assert location.startswith(f"{self.base}/oauth/consent?ticket="), location
        return Started(query_of(location)["ticket"], verifier, state)

    def consent(
        self, ticket: str, secret: str = OWNER_SECRET, decision: str = "approve", source: str | None = None
    ) -> Response:
        headers = {"X-Forwarded-For": source} if source else {}
        return self.http.post(
            "/oauth/consent", data={"ticket": ticket, "owner_secret": secret, "decision": decision}, headers=headers
        )

    def authorize(self, client: dict[str, Any], source: str | None = None) -> tuple[str, str]:
        """Register-to-code: the code and its PKCE verifier."""
        started = self.start(client)
        response = self.consent(started.ticket, source=source)
        assert response.status_code == 302, response.text
        redirect = response.headers["location"]
        assert redirect.startswith(REDIRECT_URI)
        params = query_of(redirect)
        assert params["state"] == started.state
        return params["code"], started.verifier

    def token(self, client: dict[str, Any], code: str, verifier: str, redirect_uri: str = REDIRECT_URI) -> Response:
        return self.http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "client_id": client["client_id"],
                "client_secret": client.get("client_secret", ""),
                "code_verifier": verifier,
            },
        )

    def refresh(self, client: dict[str, Any], refresh_token: str) -> Response:
        return self.http.post(
            "/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
                "client_id": client["client_id"],
                "client_secret": client.get("client_secret", ""),
            },
        )

    def revoke(self, client: dict[str, Any], token: str) -> Response:
        return self.http.post(
            "/revoke",
            data={"token": token, "client_id": client["client_id"], "client_secret": client.get("client_secret", "")},
        )

    def login(self, name: str = "Test client") -> tuple[dict[str, Any], dict[str, Any]]:
        """A registered client and its tokens."""
        client = self.register(name)
        code, verifier = self.authorize(client)
        response = self.token(client, code, verifier)
        assert response.status_code == 200, response.text
        return client, response.json()

    def mcp_status(self, token: str | None, **headers: str) -> int:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers}).status_code


def bearer_client(mcp_url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(mcp_url, http_client=http))


def expire_token(db: Path, token: str) -> None:
    """Move one token's expiry into the past, as the clock would (the server reads it per request)."""
    with sqlite3.connect(db) as conn:
        done = conn.execute(
            "UPDATE tokens SET expires_at = 1 WHERE token_hash = ?", (hashlib.sha256(token.encode()).hexdigest(),)
        )
        assert done.rowcount == 1
