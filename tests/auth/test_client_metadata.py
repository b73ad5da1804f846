"""Client ID Metadata Documents (issue 17, item 6): the real app in this process and a real HTTPS document.

The document is served over TLS on loopback by a small server in this process, with a
certificate made here and trusted through SSL_CERT_FILE; the Symbiote app fetches it because
SYMBIOTE_CIMD_ALLOW_LOOPBACK (a test-only setting) lets it reach loopback. Open registration is
off on that app: the metadata document alone lets a client sign in. Without the test setting
every private, loopback and link-local address is refused before any connection is made.
"""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import re
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from symbiote.auth.client_metadata import (
    ClientMetadataDocuments,
    ClientMetadataError,
    check_document,
    is_metadata_url,
)
from tests.auth.support import MCP_HEADERS, REDIRECT_URI, OAuthFlow, oauth_settings, pkce, query_of, served

CALLBACK = "https://app.example/callback"
MODERN = "2026-07-28"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own authority, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class Documents:
    """An HTTPS server on loopback serving client metadata documents, counting what is fetched."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.fetches: dict[str, int] = {}
        self.pages: dict[str, tuple[int, str, bytes, dict[str, str]]] = {}
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches[self.path] = owner.fetches.get(self.path, 0) + 1
                if self.path == "/slow.json":
                    time.sleep(8)
                status, kind, body, headers = owner.pages.get(self.path, (404, "text/plain", b"no", {}))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the slow document's reader gave up: that is what the test wants
                    return

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.base = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def publish(
        self,
        path: str,
        document: Any,
        *,
        kind: str = "application/json",
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.pages[path] = (status, kind, body, headers or {})
        return self.url(path)

    def client(self, path: str, **extra: Any) -> str:
        return self.publish(
            path,
            {
                "client_id": self.url(path),
                "client_name": "Doc Client",
                "redirect_uris": [CALLBACK, REDIRECT_URI],
                "token_endpoint_auth_method": "none",
                **extra,
            },
        )


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Documents]:
    cert, key = self_signed(tmp_path_factory.mktemp("tls"))
    served = Documents(cert, key)
    served.cert = cert  # type: ignore[attr-defined]
    yield served
    served.httpd.shutdown()


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, documents: Documents) -> Iterator[OAuthFlow]:
    """The real app in this process, open registration off, loopback documents allowed, and an OAuth
    client on it; SSL_CERT_FILE trusts the documents' certificate while the app lives."""
    settings = oauth_settings(
        tmp_path_factory.mktemp("cimd") / "data",
        model_dir,
        SYMBIOTE_OPEN_REGISTRATION="off",
        SYMBIOTE_CIMD_ALLOW_LOOPBACK="1",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SSL_CERT_FILE", str(documents.cert))  # type: ignore[attr-defined]
        with served(settings) as client:
            yield client


def call_tool(flow: OAuthFlow, token: str, tool: str) -> Any:
    """One tools/call on the stateless 2026-07-28 wire with `token`: its JSON-RPC answer."""
    meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: {}}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}}
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    answer = flow.http.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def authorize(flow: OAuthFlow, client_id: str, redirect_uri: str = REDIRECT_URI) -> tuple[httpx.Response, str, str]:
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st",
        "resource": f"{flow.base}/mcp",
    }
    return flow.http.get("/authorize", params=params), verifier, challenge


def test_metadata_documents_are_advertised_and_registration_can_be_off(flow: OAuthFlow) -> None:
    meta = flow.http.get("/.well-known/oauth-authorization-server").json()
    assert meta["client_id_metadata_document_supported"] is True
    assert "registration_endpoint" not in meta and "none" in meta["token_endpoint_auth_methods_supported"]
    refused = flow.http.post("/register", json={"client_name": "x", "redirect_uris": [REDIRECT_URI]})
    assert refused.status_code in (404, 405)


def test_a_client_signs_in_with_its_metadata_document(flow: OAuthFlow, documents: Documents) -> None:
    client_id = documents.client("/oauth/client.json", headers={"Cache-Control": "max-age=600"})
    response, verifier, _ = authorize(flow, client_id)
    assert response.status_code == 302, response.text
    ticket = query_of(response.headers["location"])["ticket"]
    page = flow.http.get("/oauth/consent", params={"ticket": ticket}).text
    assert "Doc Client" in page and "Described by <code>127.0.0.1</code>" in page
    approved = flow.consent(ticket)
    assert approved.status_code == 302, approved.text
    code = query_of(approved.headers["location"])["code"]
    client = {"client_id": client_id}
    tokens = flow.token(client, code, verifier).json()
    assert tokens["token_type"] == "Bearer", tokens
    stats = call_tool(flow, tokens["access_token"], "memory_stats")
    assert "result" in stats and not stats["result"].get("isError"), stats
    refreshed = flow.refresh(client, tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    assert flow.revoke(client, refreshed.json()["access_token"]).status_code == 200
    assert flow.mcp_status(refreshed.json()["access_token"]) == 401
    assert documents.fetches["/oauth/client.json"] == 1  # authorize, token, refresh, revoke: one fetch, cached
    # A redirect URI the document does not list gets nothing (an error page, no redirect).
    wrong, _, _ = authorize(flow, client_id, "https://elsewhere.example/callback")
    assert wrong.status_code == 400 and "location" not in wrong.headers


@pytest.mark.parametrize(
    ("path", "make", "reason"),
    [
        (
            "/moved.json",
            lambda d, p: d.publish(p, b"", status=302, headers={"Location": d.url("/oauth/client.json")}),
            "HTTP 302",
        ),
        ("/big.json", lambda d, p: d.client(p, padding="p" * 12_000), "larger than 10240 bytes"),
        (
            "/other-id.json",
            lambda d, p: d.publish(p, {"client_id": d.url("/else.json"), "redirect_uris": [REDIRECT_URI]}),
            "its client_id is not the URL",
        ),
        (
            "/plain.txt",
            lambda d, p: d.publish(p, {"client_id": d.url(p), "redirect_uris": [REDIRECT_URI]}, kind="text/plain"),
            "not application/json",
        ),
        (
            "/secret.json",
            lambda d, p: d.client(p, token_endpoint_auth_method="client_secret_basic"),
            "'client_secret_basic' is not supported",
        ),
        ("/http-redirect.json", lambda d, p: d.client(p, redirect_uris=["http://evil.example/cb"]), "must use https"),
        pytest.param("/slow.json", lambda d, p: d.client(p), "no answer within", marks=pytest.mark.slow),
        ("/missing.json", lambda d, p: d.url(p), "HTTP 404"),
    ],
)
def test_documents_that_fail_a_check_are_refused(
    flow: OAuthFlow, documents: Documents, path: str, make: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    client_id = make(documents, path)
    started = time.monotonic()
    response, _, _ = authorize(flow, client_id, "http://evil.example/cb" if "http-redirect" in path else REDIRECT_URI)
    assert response.status_code == 400 and "location" not in response.headers, response.text
    assert time.monotonic() - started < 7  # the slow one is given up after 5 seconds
    again, _, _ = authorize(flow, client_id)
    assert again.status_code == 400 and documents.fetches.get(path, 0) <= 1  # the refusal is cached too
    assert reason in caplog.text, reason


def test_private_addresses_are_refused_without_a_connection() -> None:
    import asyncio

    documents = ClientMetadataDocuments()  # no test setting: loopback is as private as the rest
    for url in (
        "https://127.0.0.1:9/client.json",
        "https://[::1]/c.json",
        "https://10.0.0.8/c.json",
        "https://169.254.169.254/latest/meta-data",
        "https://192.168.1.1/c.json",
        "https://localhost/c.json",
        "https://100.64.0.1/c.json",
        "https://[fd00::1]/c.json",
        "https://[::ffff:10.0.0.1]/c.json",
    ):
        with pytest.raises(ClientMetadataError, match="not public"):
            asyncio.run(documents.document(url))
    for url, valid in (
        ("https://claude.ai/oauth/mcp-oauth-client-metadata", True),
        ("https://app.example/", False),
        ("http://app.example/c.json", False),
        ("https://u:p@app.example/c.json", False),
        ("https://app.example/a/../c.json", False),
        ("https://app.example/c.json#x", False),
        ("fd7a6f2e-uuid-of-a-registered-client", False),
    ):
        assert is_metadata_url(url) is valid, url


def test_a_document_that_is_no_public_client_is_refused_saying_why() -> None:
    url = "https://app.example/oauth/client.json"
    good = {"client_id": url, "redirect_uris": ["https://app.example/cb"]}
    assert check_document(url, good) == good
    for document, why in (
        (["not", "an", "object"], "client metadata must be a JSON object"),
        ({"client_id": url}, "it lists no redirect_uris"),
        ({**good, "client_secret": "s3cret"}, "it contains a client secret, which a public document must not"),
        ({**good, "grant_types": ["client_credentials"]}, "its grant_types do not include authorization_code"),
    ):
        with pytest.raises(ClientMetadataError, match=re.escape(why)):
            check_document(url, document)
    assert is_metadata_url("https://[app.example/c.json") is False  # an unbalanced bracket: no URL at all
