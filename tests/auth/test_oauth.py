"""OAuth 2.1 and API keys against a real `symbiote serve` in oauth mode, with a real OAuth client (httpx).

The happy path (register, authorize with the owner secret, exchange the code with the PKCE
verifier, call /mcp, refresh, revoke) and each failure: no token (401 + challenge), wrong and
expired tokens, a wrong PKCE verifier, an unregistered redirect URI, a replayed code, a wrong
owner secret (rate-limited), an API key after revocation; plus credentials never stored or logged
in clear. A restart, a proxy's forwarded host and a missing owner secret need no process of their
own: the real app in this process (`served`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from symbiote.auth.auth_store import AUTH_DB_NAME
from tests.auth.support import (
    INITIALIZE,
    MCP_HEADERS,
    OWNER_SECRET,
    REDIRECT_URI,
    OAuthFlow,
    bearer_client,
    expire_token,
    oauth_env,
    oauth_settings,
    query_of,
    served,
)
from tests.conftest import MODEL_DIR, ServerProcess

pytestmark = pytest.mark.server(
    "the process is the point: keys made by `symbiote keys` in another process work at once; its access log"
)


@pytest.fixture
def flow(oauth_server: ServerProcess) -> Iterator[OAuthFlow]:
    flow = OAuthFlow(oauth_server.base_url)
    yield flow
    flow.close()


def db_of(server: ServerProcess) -> Path:
    return server.data_dir / AUTH_DB_NAME


def run_cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHROMADB_PATH": str(server.data_dir), "SYMBIOTE_MODEL_DIR": str(MODEL_DIR), **oauth_env()}
    return subprocess.run(
        [sys.executable, "-m", "symbiote", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_no_token_gets_401_and_the_challenge_leads_to_the_metadata(
    flow: OAuthFlow, oauth_server: ServerProcess
) -> None:
    base = oauth_server.base_url
    response = flow.http.post("/mcp", json={}, headers={"accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "error=" not in challenge  # RFC 6750 §3.1: no token, no error code
    assert 'scope="memory"' in challenge  # the scope a client asks for, before any metadata
    metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
    assert metadata_url == f"{base}/.well-known/oauth-protected-resource/mcp"
    resource = flow.http.get(metadata_url).json()
    assert resource["resource"] == f"{base}/mcp"
    assert resource["authorization_servers"] == [base]
    # RFC 9728 §3.1: the metadata at the root is the origin's, for clients that look there first.
    assert flow.http.get("/.well-known/oauth-protected-resource").json() == {**resource, "resource": base}
    server = flow.http.get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["authorization_response_iss_parameter_supported"] is True  # RFC 9207
    assert server["registration_endpoint"] == f"{base}/register"
    assert server["revocation_endpoint"] == f"{base}/revoke"
    assert set(server["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    # Everything private sits behind the token; health stays public and says nothing private.
    assert flow.http.get("/sse").status_code == 401
    assert flow.http.post("/messages/?session_id=x", json={}).status_code == 401
    assert flow.http.get("/memories/mem_1").status_code == 401
    health = flow.http.get("/health").json()
    assert health["status"] == "ok" and "memories" in health
    assert flow.http.get("/mcp").status_code == 405


async def test_register_authorize_exchange_call_refresh_revoke(flow: OAuthFlow, oauth_server: ServerProcess) -> None:
    client = flow.register("Claude")
    assert client["client_secret"] and client["client_id"]
    started = flow.start(client)
    page = flow.http.get("/oauth/consent", params={"ticket": started.ticket})
    assert page.status_code == 200
    assert "Claude" in page.text and "http://127.0.0.1:9" in page.text and 'type="password"' in page.text
    assert (
        page.headers["x-frame-options"] == "DENY"
        and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    )

    approved = flow.consent(started.ticket)
    assert approved.status_code == 302
    redirect = query_of(approved.headers["location"])
    assert redirect["state"] == started.state and redirect["iss"] == oauth_server.base_url
    tokens_response = flow.token(client, redirect["code"], started.verifier)
    assert tokens_response.status_code == 200, tokens_response.text
    assert tokens_response.headers["cache-control"] == "no-store"
    tokens = tokens_response.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600 and tokens["scope"] == "memory"

    async with bearer_client(oauth_server.mcp_url, tokens["access_token"]) as mcp:
        stored = await mcp.call_tool("store_memory", {"content": "We keep the sourdough starter in the garage fridge"})
        found = await mcp.call_tool("search_memory", {"query": "where is the sourdough starter?"})
        tool_names = {tool.name for tool in (await mcp.list_tools()).tools}
    assert not stored.is_error and not found.is_error
    assert found.structured_content["results"][0]["memory_id"] == stored.structured_content["memory_id"]
    assert {"search", "fetch"} <= tool_names  # ChatGPT's pair: on wherever OAuth is

    # Refresh rotates both tokens; the old refresh token is spent.
    refreshed = flow.refresh(client, tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    fresh = refreshed.json()
    assert fresh["access_token"] != tokens["access_token"] and fresh["refresh_token"] != tokens["refresh_token"]
    assert flow.mcp_status(fresh["access_token"]) == 200
    again = flow.refresh(client, tokens["refresh_token"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"

    # Revoking the access token ends the grant: the access and the refresh token stop working.
    assert flow.revoke(client, fresh["access_token"]).status_code == 200
    assert flow.mcp_status(fresh["access_token"]) == 401
    assert flow.refresh(client, fresh["refresh_token"]).status_code == 400


def test_wrong_and_expired_tokens_are_refused(flow: OAuthFlow, oauth_server: ServerProcess) -> None:
    client, tokens = flow.login()
    assert flow.mcp_status(tokens["access_token"]) == 200
    for wrong in (
        "sym_at_" + secrets.token_urlsafe(32),
        tokens["access_token"][:-2] + "xx",
        tokens["refresh_token"],  # a refresh token is not an access token
        client["client_secret"],
    ):
        assert flow.mcp_status(wrong) == 401
    assert flow.http.post("/mcp", json={}, headers={"Authorization": "Basic Zm9vOmJhcg=="}).status_code == 401
    expire_token(db_of(oauth_server), tokens["access_token"])
    assert flow.mcp_status(tokens["access_token"]) == 401
    # The client refreshes and is back, as Claude does after an hour.
    refreshed = flow.refresh(client, tokens["refresh_token"])
    assert refreshed.status_code == 200 and flow.mcp_status(refreshed.json()["access_token"]) == 200


# Every route a token opens: (method, path, the path of the resource it belongs to).
PROTECTED = [
    ("POST", "/mcp", "/mcp"),
    ("GET", "/sse", "/sse"),
    ("POST", "/messages/0123456789abcdef0123456789abcdef", "/sse"),
    ("POST", "/messages/?session_id=0123456789abcdef0123456789abcdef", "/sse"),
    ("GET", "/memories/mem_1", ""),
]


def narrow_scope(db: Path, token: str) -> None:
    """Take the `memory` scope from one token's grant (no grant the server makes lacks it)."""
    with sqlite3.connect(db) as conn:
        done = conn.execute(
            "UPDATE grants SET scopes = 'profile' WHERE grant_id = (SELECT grant_id FROM tokens WHERE token_hash = ?)",
            (hashlib.sha256(token.encode()).hexdigest(),),
        )
        assert done.rowcount == 1


def test_every_protected_route_challenges_by_rfc_6750_and_names_its_resource(
    flow: OAuthFlow, oauth_server: ServerProcess
) -> None:
    """No token: 401 without an error code (RFC 6750 §3.1); a malformed one: 400 `invalid_request`;
    a bad token, or one for another server: 401 `invalid_token`; a token without the scope: 403
    `insufficient_scope`. Each challenge names
    the metadata of the route's own resource (RFC 9728 §5.1), which names that resource."""
    base = oauth_server.base_url
    _client, tokens = flow.login()
    _client, narrow = flow.login()
    narrow_scope(db_of(oauth_server), narrow["access_token"])
    elsewhere = OAuthFlow(f"http://localhost:{oauth_server.port}")  # this process under another name: another origin
    elsewhere.http = httpx.Client(base_url=base, headers={"Host": f"localhost:{oauth_server.port}"}, timeout=30)
    try:
        _client, foreign = elsewhere.login()
    finally:
        elsewhere.close()
    for method, path, resource_path in PROTECTED:
        metadata_url = f"{base}/.well-known/oauth-protected-resource{resource_path}"
        where = f'resource_metadata="{metadata_url}", scope="memory"'

        def call(authorization: str | None, method: str = method, path: str = path) -> httpx.Response:
            headers = {**MCP_HEADERS, **({"Authorization": authorization} if authorization else {})}
            return flow.http.request(method, path, headers=headers, content=b"{}" if method == "POST" else None)

        for anonymous in (None, "Basic Zm9vOmJhcg=="):
            refused = call(anonymous)
            assert refused.status_code == 401, (path, anonymous, refused.status_code)
            assert refused.headers["www-authenticate"] == f"Bearer {where}", (path, anonymous)
        for malformed in ("Bearer", "Bearer two words", "Bearer tok,en"):
            refused = call(malformed)
            challenge = refused.headers["www-authenticate"]
            assert refused.status_code == 400 and refused.json()["error"] == "invalid_request", (path, malformed)
            assert challenge.startswith('Bearer error="invalid_request", ') and challenge.endswith(where), challenge
        for bad in ("sym_at_" + secrets.token_urlsafe(32), foreign["access_token"], tokens["refresh_token"]):
            refused = call(f"Bearer {bad}")
            challenge = refused.headers["www-authenticate"]
            assert refused.status_code == 401 and refused.json()["error"] == "invalid_token", (path, refused.text)
            assert challenge.startswith('Bearer error="invalid_token", ') and challenge.endswith(where), challenge
        refused = call(f"Bearer {narrow['access_token']}")
        challenge = refused.headers["www-authenticate"]
        assert refused.status_code == 403 and refused.json()["error"] == "insufficient_scope", (path, refused.text)
        assert challenge.startswith('Bearer error="insufficient_scope", ') and challenge.endswith(where), challenge
        metadata = flow.http.get(metadata_url)
        assert metadata.status_code == 200 and metadata.json()["resource"] == f"{base}{resource_path}"
        assert metadata.json()["authorization_servers"] == [base] and metadata.json()["scopes_supported"] == ["memory"]
    # The good token passes every guard (the legacy stream is the SDK client's, in test_sdk_client.py).
    good = {**MCP_HEADERS, "Authorization": f"Bearer {tokens['access_token']}"}
    assert flow.http.post("/mcp", json=INITIALIZE, headers=good).status_code == 200
    assert flow.http.post("/messages/0123456789abcdef0123456789abcdef", json={}, headers=good).status_code == 404
    link = flow.http.get("/memories/mem_" + "0" * 20, headers=good)
    assert link.status_code == 404, link.text
    malformed = flow.http.get("/memories/mem_1", headers=good)
    assert malformed.status_code == 400 and "is not a memory id" in malformed.text


def test_wrong_pkce_verifier_and_wrong_client_secret_get_no_token(flow: OAuthFlow) -> None:
    client = flow.register()
    code, verifier = flow.authorize(client)
    wrong = flow.token(client, code, verifier[:-4] + "abcd")
    assert wrong.status_code == 400 and wrong.json() == {
        "error": "invalid_grant",
        "error_description": "incorrect code_verifier",
    }
    missing = flow.http.post(
        "/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
        },
    )
    assert missing.status_code == 400
    bad_secret = flow.token({**client, "client_secret": "not-the-secret"}, code, verifier)
    assert bad_secret.status_code == 401 and bad_secret.json()["error"] == "invalid_client"
    other = flow.register("Someone else")
    stolen = flow.token(
        {**client, "client_id": other["client_id"], "client_secret": other["client_secret"]}, code, verifier
    )
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"


def test_plain_challenge_and_unregistered_redirect_uri_are_refused(flow: OAuthFlow) -> None:
    client = flow.register(redirect_uris=[REDIRECT_URI])
    base = {"response_type": "code", "client_id": client["client_id"], "state": "s", "code_challenge": "x" * 43}
    wrong_redirect = flow.http.get("/authorize", params={**base, "redirect_uri": "https://evil.example/callback"})
    assert wrong_redirect.status_code == 400  # shown to the user, never redirected to the unregistered URI
    assert "location" not in wrong_redirect.headers and "not registered" in wrong_redirect.json()["error_description"]
    plain = flow.http.get("/authorize", params={**base, "redirect_uri": REDIRECT_URI, "code_challenge_method": "plain"})
    assert plain.status_code == 302 and query_of(plain.headers["location"])["error"] == "invalid_request"
    no_pkce = flow.http.get(
        "/authorize", params={k: v for k, v in {**base, "redirect_uri": REDIRECT_URI}.items() if k != "code_challenge"}
    )
    assert no_pkce.status_code == 302 and query_of(no_pkce.headers["location"])["error"] == "invalid_request"
    unknown = flow.http.get("/authorize", params={**base, "client_id": "nobody", "redirect_uri": REDIRECT_URI})
    assert unknown.status_code == 400
    other_resource = flow.http.get(
        "/authorize", params={**base, "redirect_uri": REDIRECT_URI, "resource": "https://elsewhere.example/mcp"}
    )
    assert (
        other_resource.status_code == 302 and query_of(other_resource.headers["location"])["error"] == "invalid_target"
    )
    for error in (plain, no_pkce, other_resource):  # RFC 9207: error responses name the issuer too, once
        sent = parse_qs(urlsplit(error.headers["location"]).query)
        assert sent["iss"] == [flow.base] and sent["state"] == ["s"], error.headers["location"]
    # Registration itself refuses redirect URIs a code must never travel to.
    for bad in ("http://evil.example/callback", "javascript:alert(1)"):
        refused = flow.http.post("/register", json={"client_name": "x", "redirect_uris": [bad]})
        assert refused.status_code == 400 and refused.json()["error"] in (
            "invalid_redirect_uri",
            "invalid_client_metadata",
        )
    # A native app's loopback redirect may change port (RFC 8252 §7.3), never host or path.
    loopback = flow.register(redirect_uris=["http://127.0.0.1/callback"])
    started = flow.start(loopback, redirect_uri="http://127.0.0.1:53682/callback")
    assert flow.consent(started.ticket).headers["location"].startswith("http://127.0.0.1:53682/callback?")
    refused = flow.http.get(
        "/authorize",
        params={**base, "client_id": loopback["client_id"], "redirect_uri": "http://127.0.0.1:53682/other"},
    )
    assert refused.status_code == 400


def test_a_replayed_code_is_refused_and_revokes_what_it_issued(flow: OAuthFlow) -> None:
    client = flow.register()
    code, verifier = flow.authorize(client)
    first = flow.token(client, code, verifier)
    assert first.status_code == 200
    tokens = first.json()
    assert flow.mcp_status(tokens["access_token"]) == 200
    replay = flow.token(client, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    # RFC 6749 §4.1.2: a code used twice means it leaked; what it issued is revoked.
    assert flow.mcp_status(tokens["access_token"]) == 401
    assert flow.refresh(client, tokens["refresh_token"]).status_code == 400


def test_wrong_owner_secret_is_rate_limited_and_the_owner_still_gets_in(flow: OAuthFlow) -> None:
    client = flow.register("Attacker's app")
    started = flow.start(client)
    statuses = [flow.consent(started.ticket, secret=f"guess-{i}", source="203.0.113.9").status_code for i in range(5)]
    assert statuses == [401] * 5
    locked = flow.consent(started.ticket, secret=OWNER_SECRET, source="203.0.113.9")
    assert locked.status_code == 429  # even the right secret is not checked while locked
    assert 1 <= int(locked.headers["retry-after"]) <= 900 and "Try again in" in locked.text
    # The owner, from their own address, signs in at once.
    owner = flow.consent(started.ticket, source="198.51.100.20")
    assert owner.status_code == 302 and "code=" in owner.headers["location"]
    # A ticket is good for one approval only.
    assert flow.consent(started.ticket, source="198.51.100.20").status_code == 400


def test_the_owner_can_deny(flow: OAuthFlow) -> None:
    client = flow.register()
    started = flow.start(client)
    denied = flow.consent(started.ticket, secret="", decision="deny")
    assert denied.status_code == 302
    params = query_of(denied.headers["location"])
    assert params["error"] == "access_denied" and params["state"] == started.state and "code" not in params
    assert flow.consent(started.ticket).status_code == 400
    assert flow.http.get("/oauth/consent", params={"ticket": "made-up"}).status_code == 400


def test_consent_page_escapes_the_client_name(flow: OAuthFlow) -> None:
    client = flow.register("<script>alert('owned')</script>")
    started = flow.start(client)
    page = flow.http.get("/oauth/consent", params={"ticket": started.ticket}).text
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in page


def test_foreign_host_is_refused(flow: OAuthFlow) -> None:
    assert flow.http.get("/.well-known/oauth-authorization-server", headers={"Host": "evil.example"}).status_code == 421
    assert flow.mcp_status(None, Host="evil.example") == 421
    # Even from the trusted proxy, a forwarded host name we do not answer to is refused. (Without
    # SYMBIOTE_TRUST_FORWARDED_HEADERS the headers are not read at all: tests/hardening/test_servers.py.)
    forged = flow.http.get(
        "/.well-known/oauth-authorization-server",
        headers={"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
    )
    assert forged.status_code == 421


def test_api_key_create_use_list_revoke(flow: OAuthFlow, oauth_server: ServerProcess) -> None:
    created = run_cli(oauth_server, "keys", "create", "vscode laptop")
    assert created.returncode == 0, created.stderr
    key = next(word for word in created.stdout.split() if word.startswith("sym_key_"))
    assert flow.mcp_status(key) == 200
    listed = run_cli(oauth_server, "keys", "list")
    assert listed.returncode == 0 and "vscode laptop" in listed.stdout and "active" in listed.stdout
    assert key not in listed.stdout and key[:20] not in listed.stdout
    revoked = run_cli(oauth_server, "keys", "revoke", "vscode laptop")
    assert revoked.returncode == 0, revoked.stderr
    assert flow.mcp_status(key) == 401
    assert "revoked" in run_cli(oauth_server, "keys", "list").stdout
    assert run_cli(oauth_server, "keys", "revoke", "vscode laptop").returncode == 1


def test_oauth_revoke_all_disconnects_connectors_but_not_api_keys(flow: OAuthFlow, oauth_server: ServerProcess) -> None:
    client, tokens = flow.login("To be disconnected")
    created = run_cli(oauth_server, "keys", "create", "survivor")
    key = next(word for word in created.stdout.split() if word.startswith("sym_key_"))
    done = run_cli(oauth_server, "oauth", "revoke-all")
    assert done.returncode == 0 and "Revoked" in done.stdout
    assert flow.mcp_status(tokens["access_token"]) == 401
    assert flow.refresh(client, tokens["refresh_token"]).status_code == 400
    assert flow.mcp_status(key) == 200
    _client, fresh = flow.login("Signs in again")
    assert flow.mcp_status(fresh["access_token"]) == 200


def test_credentials_are_stored_hashed_and_never_logged(flow: OAuthFlow, oauth_server: ServerProcess) -> None:
    client, tokens = flow.login("Hash check")
    created = run_cli(oauth_server, "keys", "create", "hash check")
    key = next(word for word in created.stdout.split() if word.startswith("sym_key_"))
    assert flow.mcp_status(key) == 200
    stored = db_of(oauth_server).read_bytes()
    log = oauth_server.log()
    for secret in (tokens["access_token"], tokens["refresh_token"], client["client_secret"], key, OWNER_SECRET):
        assert secret.encode() not in stored
        assert secret not in log
    assert "/oauth/consent" in log  # the access log is on, and still carries no credential


def test_a_restart_keeps_clients_connected(tmp_path: Path, model_dir: Path) -> None:
    """Scale to zero and back: the registration, the access token and the refresh token survive (the
    app closed and a new one on the same data, in this process)."""
    settings = oauth_settings(tmp_path / "data", model_dir)
    with served(settings) as flow:
        client, tokens = flow.login()
    with served(settings) as flow:
        assert flow.mcp_status(tokens["access_token"]) == 200
        refreshed = flow.refresh(client, tokens["refresh_token"])
        assert refreshed.status_code == 200 and flow.mcp_status(refreshed.json()["access_token"]) == 200


def test_issuer_and_resource_follow_the_forwarded_host(tmp_path: Path, model_dir: Path) -> None:
    """Behind a TLS proxy: the issuer, metadata and challenge use the public https name; a token is
    bound to the name it was issued on, and a forged host name is refused."""
    public = "memory.example.com"
    env = {"SYMBIOTE_TRUST_FORWARDED_HEADERS": "1", "SYMBIOTE_ALLOWED_HOSTS": public}
    proxied = {"X-Forwarded-Host": public, "X-Forwarded-Proto": "https"}
    with served(oauth_settings(tmp_path / "data", model_dir, **env)) as flow:
        meta = flow.http.get("/.well-known/oauth-authorization-server", headers=proxied).json()
        assert meta["issuer"] == f"https://{public}" and meta["token_endpoint"] == f"https://{public}/token"
        challenge = flow.http.post("/mcp", json={}, headers=proxied).headers["www-authenticate"]
        assert f'resource_metadata="https://{public}/.well-known/oauth-protected-resource/mcp"' in challenge
        resource = flow.http.get("/.well-known/oauth-protected-resource/mcp", headers=proxied).json()
        assert resource["resource"] == f"https://{public}/mcp"
        forged = flow.http.get(
            "/.well-known/oauth-authorization-server", headers={**proxied, "X-Forwarded-Host": "evil.example"}
        )
        assert forged.status_code == 421
        _client, tokens = flow.login()  # issued for http://127.0.0.1/mcp
        assert flow.mcp_status(tokens["access_token"]) == 200
        assert flow.mcp_status(tokens["access_token"], **proxied) == 401  # not for https://memory.example.com/mcp


def test_oauth_without_owner_secret_accepts_only_api_keys(
    tmp_path: Path, model_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING),
        served(oauth_settings(tmp_path / "data", model_dir, SYMBIOTE_OWNER_SECRET="")) as flow,
    ):
        assert "SYMBIOTE_OWNER_SECRET is not set" in caplog.text
        client = flow.register()
        started = flow.start(client)
        page = flow.http.get("/oauth/consent", params={"ticket": started.ticket})
        assert page.status_code == 503 and "SYMBIOTE_OWNER_SECRET" in page.text
        assert flow.consent(started.ticket, secret="anything at all, really").status_code == 503


def test_token_and_refresh_hold_the_resource_to_the_authorizations(flow: OAuthFlow) -> None:
    """RFC 8707: `/token` naming another resource is `invalid_target`, and spends nothing; the
    authorization's own resource (or its origin) is accepted."""
    client = flow.register("Resource")
    code, verifier = flow.authorize(client)
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
        "code_verifier": verifier,
    }
    foreign = flow.http.post("/token", data={**data, "resource": "https://evil.example/mcp"})
    assert foreign.status_code == 400 and foreign.json()["error"] == "invalid_target", foreign.text
    issued = flow.http.post("/token", data={**data, "resource": f"{flow.base}/mcp/"})  # the code was not spent
    assert issued.status_code == 200, issued.text
    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": issued.json()["refresh_token"],
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
    }
    foreign = flow.http.post("/token", data={**refresh, "resource": "https://evil.example/mcp"})
    assert foreign.status_code == 400 and foreign.json()["error"] == "invalid_target", foreign.text
    rotated = flow.http.post("/token", data={**refresh, "resource": flow.base})  # not rotated by the refusal
    assert rotated.status_code == 200, rotated.text
