"""Issue 20 against real servers: nobody outside can lock the owner out, exhaust the server, or
read a credential in a log.

Two OAuth servers: `direct` is reached without a proxy (forwarded headers not trusted, as on a
laptop or behind a tunnel), `proxied` trusts X-Forwarded-For as a deployment behind its own proxy
does, so a test can speak from many addresses. Each test names the issue item it closes.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from symbiote.auth import AUTH_DB_NAME, SignInLimiter
from tests.auth.support import (
    INITIALIZE,
    MCP_HEADERS,
    OWNER_SECRET,
    REDIRECT_URI,
    OAuthFlow,
    bearer_client,
    oauth_env,
    query_of,
)
from tests.conftest import MODEL_DIR, ServerProcess

pytestmark = pytest.mark.server(
    "the process is the point: floods on its real socket, its access log, its files and memory"
)


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(
        tmp_path_factory.mktemp("direct") / "data", env=oauth_env(SYMBIOTE_REGISTRATIONS_PER_MINUTE="50")
    ).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    env = oauth_env(
        SYMBIOTE_TRUST_FORWARDED_HEADERS="1",
        SYMBIOTE_REGISTRATIONS_PER_MINUTE="10",
        SYMBIOTE_REGISTRATIONS_PER_HOUR="100",
    )
    proc = ServerProcess(tmp_path_factory.mktemp("proxied") / "data", env=env).start()
    yield proc
    proc.stop()


def cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHROMADB_PATH": str(server.data_dir), "SYMBIOTE_MODEL_DIR": str(MODEL_DIR), **oauth_env()}
    return subprocess.run(
        [sys.executable, "-m", "symbiote", *args], env=env, capture_output=True, text=True, timeout=60
    )


def api_key(server: ServerProcess, name: str) -> str:
    created = cli(server, "keys", "create", name)
    assert created.returncode == 0, created.stderr
    return next(word for word in created.stdout.split() if word.startswith("sym_key_"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def register_from(http: httpx.Client, address: str, name: str = "Flood") -> httpx.Response:
    return http.post(
        "/register", json={"client_name": name, "redirect_uris": [REDIRECT_URI]}, headers={"X-Forwarded-For": address}
    )


# -- 1. registration: budgets, sizes, and a flood never blocks who is already in -------------------


def test_a_registration_flood_is_budgeted_and_blocks_no_existing_client(proxied: ServerProcess) -> None:
    flow = OAuthFlow(proxied.base_url)
    owner_client, owner_tokens = flow.login("Owner's Claude")  # 1 registration
    waiting = flow.register("Owner's ChatGPT")  # 2: a sign-in is in progress when the flood comes
    in_progress = flow.start(waiting)
    # One address: 10 a minute, then 429 with Retry-After.
    answers = [register_from(flow.http, "203.0.113.1").status_code for _ in range(11)]
    assert answers == [201] * 10 + [429]
    refused = register_from(flow.http, "203.0.113.1")
    assert refused.json()["error"] == "too_many_requests" and 1 <= int(refused.headers["retry-after"]) <= 60
    # Many addresses: 100 an hour in all (12 are spent above).
    accepted = 0
    for i in range(20):
        for _ in range(10):
            accepted += register_from(flow.http, f"198.51.100.{i}").status_code == 201
    assert accepted == 100 - 12
    overall = register_from(flow.http, "192.0.2.200")
    assert overall.status_code == 429 and 60 < int(overall.headers["retry-after"]) <= 3600
    # Who was already in is untouched: the connected app, a new sign-in of a registered app, and
    # the sign-in that was waiting for the owner.
    assert flow.mcp_status(owner_tokens["access_token"]) == 200
    assert flow.refresh(owner_client, owner_tokens["refresh_token"]).status_code == 200
    code, verifier = flow.authorize(owner_client)
    assert flow.token(owner_client, code, verifier).status_code == 200
    approved = flow.consent(in_progress.ticket)
    assert approved.status_code == 302, approved.text
    assert flow.token(waiting, query_of(approved.headers["location"])["code"], in_progress.verifier).status_code == 200
    flow.close()


def test_registration_fields_have_size_limits(direct: ServerProcess) -> None:
    db = direct.data_dir / AUTH_DB_NAME
    with httpx.Client(base_url=direct.base_url, timeout=30) as http:
        http.post("/register", json={"client_name": "first", "redirect_uris": [REDIRECT_URI]})
        size_before = db.stat().st_size
        for body in (
            {"client_name": "x" * (4 * 1024 * 1024), "redirect_uris": [REDIRECT_URI]},
            {"client_name": "x", "redirect_uris": [f"http://127.0.0.1:9/{i}" for i in range(50_000)]},
        ):
            too_big = http.post("/register", json=body)
            assert too_big.status_code == 413 and "bytes" in too_big.json()["error_description"]
        for body, field in (
            ({"client_name": "x" * 201, "redirect_uris": [REDIRECT_URI]}, "client_name"),
            ({"client_name": "x", "redirect_uris": [f"http://127.0.0.1:9/{i}" for i in range(11)]}, "redirect_uris"),
            ({"client_name": "x", "redirect_uris": [REDIRECT_URI + "x" * 1000]}, "redirect_uris"),
            ({"client_name": "x", "redirect_uris": [REDIRECT_URI], "contacts": ["a@b.c"] * 11}, "contacts"),
            (
                {"client_name": "x", "redirect_uris": [REDIRECT_URI], "logo_uri": "https://e.example/" + "x" * 1000},
                "logo_uri",
            ),
            ({"client_name": ["not", "text"], "redirect_uris": [REDIRECT_URI]}, "client_name"),
        ):
            refused = http.post("/register", json=body)
            assert refused.status_code == 400, (field, refused.text)
            assert refused.json()["error"] == "invalid_client_metadata" and field in refused.json()["error_description"]
    assert db.stat().st_size - size_before < 64 * 1024  # nothing of that reached the sign-in database


def test_loopback_lookalike_redirect_uris_are_refused(direct: ServerProcess) -> None:
    """Item 4: plain http is for loopback addresses only, never for names that start like one."""
    with httpx.Client(base_url=direct.base_url, timeout=30) as http:
        for uri in ("http://127.0.0.1.nip.io/callback", "http://127.example.com/cb", "http://localhost.example.com/cb"):
            refused = http.post("/register", json={"client_name": "x", "redirect_uris": [uri]})
            assert refused.status_code == 400 and "https" in refused.json()["error_description"], refused.text
        assert (
            http.post("/register", json={"client_name": "x", "redirect_uris": ["http://127.0.0.2:5/cb"]}).status_code
            == 201
        )


# -- 5. revocation for every client type; 10. access tokens end with their grant -----------------


def basic(client: dict[str, Any]) -> dict[str, str]:
    pair = f"{client['client_id']}:{client['client_secret']}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def test_every_client_type_can_revoke_its_tokens(direct: ServerProcess) -> None:
    flow = OAuthFlow(direct.base_url)
    public = flow.register("Native app", token_endpoint_auth_method="none")
    assert not public.get("client_secret")
    code, verifier = flow.authorize(public)
    tokens = flow.token(public, code, verifier).json()
    revoked = flow.http.post("/revoke", data={"token": tokens["access_token"], "client_id": public["client_id"]})
    assert revoked.status_code == 200, revoked.text
    assert (
        flow.mcp_status(tokens["access_token"]) == 401
        and flow.refresh(public, tokens["refresh_token"]).status_code == 400
    )

    confidential = flow.register("Basic app", token_endpoint_auth_method="client_secret_basic")
    code, verifier = flow.authorize(confidential)
    exchanged = flow.http.post(
        "/token",
        headers=basic(confidential),
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": confidential["client_id"],
            "code_verifier": verifier,
        },
    )
    assert exchanged.status_code == 200, exchanged.text
    tokens = exchanged.json()
    wrong = {**confidential, "client_secret": "not-it"}
    refused = flow.http.post("/revoke", data={"token": tokens["refresh_token"]}, headers=basic(wrong))
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    assert "basic" in refused.headers["www-authenticate"].lower()
    assert flow.mcp_status(tokens["access_token"]) == 200
    revoked = flow.http.post(
        "/revoke",
        data={"token": tokens["refresh_token"], "token_type_hint": "refresh_token"},
        headers=basic(confidential),
    )
    assert revoked.status_code == 200, revoked.text
    assert flow.mcp_status(tokens["access_token"]) == 401

    posting, tokens = flow.login("Post app")
    missing = flow.http.post(
        "/revoke", data={"client_id": posting["client_id"], "client_secret": posting["client_secret"]}
    )
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    unknown = flow.revoke(posting, "sym_at_" + "x" * 43)
    assert unknown.status_code == 200  # RFC 7009 §2.2: an unknown token is no error
    # A token issued to another client is not revoked, and the answer does not say so.
    assert (
        flow.revoke(public, tokens["access_token"]).status_code == 200
        and flow.mcp_status(tokens["access_token"]) == 200
    )
    assert (
        flow.revoke(posting, tokens["access_token"]).status_code == 200
        and flow.mcp_status(tokens["access_token"]) == 401
    )
    flow.close()


def test_access_tokens_end_with_their_grant_and_on_refresh(direct: ServerProcess) -> None:
    flow = OAuthFlow(direct.base_url)
    client, first = flow.login("Rotating app")
    second = flow.refresh(client, first["refresh_token"]).json()
    assert flow.mcp_status(first["access_token"]) == 401  # replaced by the refresh: ends now, not in an hour
    assert flow.mcp_status(second["access_token"]) == 200
    assert flow.revoke(client, second["refresh_token"]).status_code == 200
    assert flow.mcp_status(second["access_token"]) == 401  # revoking the grant ends its access token too
    flow.close()


# -- 8. bodies before the token check; 9. logs, file modes ---------------------------------------


async def _post_many(port: int, path: str, size: int, count: int) -> dict[str, int]:
    """`count` concurrent POSTs announcing `size` bytes without a token, each sending its body
    until the answer comes; the answers (or "cut off")."""
    outcomes: dict[str, int] = {}
    chunk = b" " * (256 * 1024)

    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answer = asyncio.ensure_future(reader.readline())
        try:
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {size}\r\n\r\n".encode()
            )
            sent = 0
            while sent < size and not answer.done():
                writer.write(chunk[: size - sent])
                sent += min(len(chunk), size - sent)
                await asyncio.wait([answer, asyncio.ensure_future(writer.drain())], return_when=asyncio.FIRST_COMPLETED)
            status = (await asyncio.wait_for(answer, 30)).split()[1].decode()
        except (TimeoutError, OSError, IndexError):
            status = "cut off"
        finally:
            answer.cancel()
            writer.close()
        outcomes[status] = outcomes.get(status, 0) + 1

    await asyncio.gather(*(one() for _ in range(count)))
    return outcomes


async def test_unauthenticated_bodies_are_small_and_cost_no_memory(direct: ServerProcess) -> None:
    assert direct.proc is not None
    pid = direct.proc.pid
    key = api_key(direct, "big bodies")
    async with bearer_client(direct.mcp_url, key) as client:  # the model is loaded: it is not what grows
        assert not (await client.call_tool("search_memory", {"query": "warm up"})).is_error
    baseline = rss_mib(pid)
    peak = [baseline]
    sampling = True

    def sample() -> None:
        while sampling:
            peak.append(rss_mib(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        mcp = await _post_many(direct.port, "/mcp", 4 * 1024 * 1024 - 1024, 100)
        register = await _post_many(direct.port, "/register", 4 * 1024 * 1024 - 1024, 20)
    finally:
        sampling = False
        sampler.join()
    assert set(mcp) <= {"401", "cut off"} and mcp.get("401", 0) >= 50, mcp
    assert set(register) <= {"413", "cut off"} and register.get("413", 0) >= 10, register
    assert max(peak) - baseline < 80, (baseline, max(peak))  # 100 x 4 MiB held would be 400 MiB
    # With a token the full cap still applies: a 100 KB request reaches the tool (which refuses the query).
    async with bearer_client(direct.mcp_url, key) as client:
        searched = await client.call_tool("search_memory", {"query": "long question " * 8000})
    assert searched.is_error and "2,000" in searched.content[0].text
    async with httpx.AsyncClient(base_url=direct.base_url, timeout=30) as http:
        small = await http.post("/register", content=b"{" + b" " * 20_000 + b"}", headers=MCP_HEADERS)
    assert small.status_code == 413 and "without a valid bearer token" in small.json()["error_description"]


def test_no_credential_reaches_the_access_log(direct: ServerProcess) -> None:
    flow = OAuthFlow(direct.base_url)
    client = flow.register("Logged app")
    started = flow.start(client)
    assert flow.http.get("/oauth/consent", params={"ticket": started.ticket}).status_code == 200
    key = api_key(direct, "in the query")
    for params in ({"access_token": key}, {"token": key}, {"key": key}, {"code": "sym_code_" + "c" * 40}):
        flow.http.post("/mcp", params=params, json=INITIALIZE, headers=MCP_HEADERS)
    flow.http.get(f"/mcp?{key}")
    time.sleep(0.5)
    log = direct.log()
    assert "/oauth/consent?ticket=[redacted]" in log and "access_token=[redacted]" in log
    for secret in (started.ticket, key, "sym_code_" + "c" * 40, OWNER_SECRET):
        assert secret not in log
    flow.close()


async def test_data_files_are_private(direct: ServerProcess) -> None:
    key = api_key(direct, "modes")
    async with bearer_client(direct.mcp_url, key) as client:
        assert not (await client.call_tool("store_memory", {"content": "files only the owner can read"})).is_error
        assert not (
            await client.call_tool("append_history", {"conversation_id": "c1", "role": "user", "text": "hi"})
        ).is_error
    loose = []
    for directory, _subdirectories, files in os.walk(direct.data_dir):
        if os.stat(directory).st_mode & 0o077:
            loose.append(directory)
        loose += [os.path.join(directory, f) for f in files if os.stat(os.path.join(directory, f)).st_mode & 0o077]
    assert not loose, loose


# -- 3. forwarded headers only from a trusted proxy (last: it leaves 127.0.0.1 throttled) ----------


def test_forwarded_headers_are_ignored_unless_trusted(direct: ServerProcess) -> None:
    flow = OAuthFlow(direct.base_url)
    forged = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.99", "X-Forwarded-Host": "localhost"}
    meta = flow.http.get("/.well-known/oauth-authorization-server", headers=forged).json()
    assert meta["issuer"] == direct.base_url  # not https, not another host: the headers were not read
    client = flow.register("Dodger")
    ticket = flow.start(client).ticket
    statuses = [
        flow.consent(ticket, secret=f"guess {i}", source=f"198.18.0.{i}").status_code
        for i in range(SignInLimiter.free_failures + 1)
    ]
    assert statuses == [401] * SignInLimiter.free_failures + [429]  # one address, whatever the header says
    time.sleep(0.3)
    log = direct.log()
    assert "198.18.0." not in log and "203.0.113.99" not in log
    flow.close()
