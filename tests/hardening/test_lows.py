"""Issue 30, items 7, 9, 10 and 12, against OAuth behind a proxy of ours (so X-Forwarded-For can
speak for many addresses). Against a real `symbiote serve`, where the process is the point: a flood of
authorization requests never refuses the owner (thousands of requests to one process, its sign-in
database read from outside), the console's search terms stay out of the access log (the server's
own log). Through the real app in this process (httpx's ASGI transport): metadata documents on NAT64
and reserved addresses are refused before any connection, and a redirect URI with a user name is refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from symbiote.auth import AUTH_DB_NAME
from symbiote.config import Settings
from tests.auth.support import OWNER_SECRET, REDIRECT_URI, OAuthFlow, oauth_env, pkce, query_of
from tests.conftest import ServerProcess, make_app

# The tests on `proxied` are marked `server` by its fixture (tests/conftest.py); the others start none.

FLOOD_ADDRESSES = 70
PER_ADDRESS = 30  # the per-address budget of authorization requests a minute


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("lows") / "data", env=oauth_env(SYMBIOTE_TRUST_FORWARDED_HEADERS="1"))
    proc.start()
    yield proc
    proc.stop()


@dataclasses.dataclass
class Proxied:
    """The app with the proxied server's settings, in this process: its routes over httpx's ASGI
    transport, its data directory (the sign-in database)."""

    http: httpx.AsyncClient
    data_dir: Path


@pytest.fixture
async def in_process_proxied(tmp_path: Path, model_dir: Path) -> AsyncIterator[Proxied]:
    env = oauth_env(SYMBIOTE_TRUST_FORWARDED_HEADERS="1", CHROMADB_PATH=str(tmp_path / "data"))
    settings = dataclasses.replace(Settings.from_env(env), model_dir=model_dir, store_process=False)
    app = make_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as http:
        yield Proxied(http, settings.chromadb_path)


def authorize_params(client_id: str, redirect_uri: str = REDIRECT_URI) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": pkce()[1],
        "code_challenge_method": "S256",
        "state": "s",
    }


async def flood(base: str, client_id: str) -> dict[str, int]:
    """2,100 authorization requests, 30 from each of 70 addresses, 16 at a time."""
    outcomes: dict[str, int] = {}
    queue = iter([f"198.18.{i}.9" for i in range(FLOOD_ADDRESSES) for _ in range(PER_ADDRESS)])
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:

        async def worker() -> None:
            for address in queue:
                answer = await http.get(
                    "/authorize", params=authorize_params(client_id), headers={"X-Forwarded-For": address}
                )
                location = answer.headers.get("location", "")
                kind = (
                    "carried"
                    if "ticket=o." in location
                    else "stored"
                    if "ticket=" in location
                    else str(answer.status_code)
                )
                outcomes[kind] = outcomes.get(kind, 0) + 1

        await asyncio.gather(*(worker() for _ in range(16)))
    return outcomes


@pytest.mark.server("the transport is the point: a flood on the real socket behind a trusted proxy")
async def test_a_flood_of_authorization_requests_never_refuses_the_owner(proxied: ServerProcess) -> None:
    """Item 7: before, the 2,001st waiting sign-in and every one after, the owner's too, were refused."""
    flow = OAuthFlow(proxied.base_url)
    flooder = flow.register("Flood")
    owner_client = flow.register("Owner's Claude")
    outcomes = await flood(proxied.base_url, flooder["client_id"])
    assert outcomes.get("stored", 0) == 2000 and outcomes.get("carried", 0) == 100, outcomes  # nothing refused
    with sqlite3.connect(proxied.data_dir / AUTH_DB_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 2000  # the cap on what is stored holds
    started = flow.start(owner_client)
    assert started.ticket.startswith("o.")
    assert "Owner&#x27;s Claude" in flow.http.get("/oauth/consent", params={"ticket": started.ticket}).text
    assert flow.consent(started.ticket, secret="a stranger's guess", source="203.0.113.50").status_code == 401
    tampered = started.ticket[:-3] + ("AAA" if not started.ticket.endswith("AAA") else "BBB")
    assert flow.consent(tampered).status_code == 400
    approved = flow.consent(started.ticket)
    assert approved.status_code == 302, approved.text
    assert flow.token(owner_client, query_of(approved.headers["location"])["code"], started.verifier).status_code == 200
    assert flow.consent(started.ticket).status_code == 400  # used once
    flow.close()


@pytest.mark.server("the process is the point: the access log the running server writes")
def test_console_search_terms_stay_out_of_the_access_log(proxied: ServerProcess) -> None:
    """Item 9: what the owner searched for is memory text too."""
    with httpx.Client(base_url=proxied.base_url, timeout=60) as http:
        assert http.post("/console/signin", data={"secret": OWNER_SECRET}).status_code == 303
        for path, params in (
            ("/console/", {"q": "zebracrossing secretword", "tag": "tagword417", "page": "2"}),
            ("/console/history", {"conversation": "convsecret42", "q": "histquery77"}),
        ):
            assert http.get(path, params=params).status_code == 200
    time.sleep(0.5)
    log = proxied.log()
    for term in ("zebracrossing", "secretword", "tagword417", "convsecret42", "histquery77"):
        assert term not in log, term
    assert "q=[redacted]&tag=[redacted]&page=2" in log and "conversation=[redacted]" in log


@pytest.mark.parametrize(
    "address",
    ["[::127.0.0.1]", "[64:ff9b::7f00:1]", "[64:ff9b:1::a00:1]", "192.0.0.192", "[2002:7f00:1::1]", "198.18.0.1"],
)
async def test_metadata_documents_on_nat64_and_reserved_addresses_are_refused(
    in_process_proxied: Proxied, address: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 10: each of these reaches (or may reach) a private address; none is fetched."""
    client_id = f"https://{address}/client.json"
    answer = await in_process_proxied.http.get(
        "/authorize", params=authorize_params(client_id, "https://app.example/cb")
    )
    assert answer.status_code == 400 and "location" not in answer.headers, answer.text
    assert f"resolves to an address that is not public ({address.strip('[]')})" in caplog.text


async def test_a_redirect_uri_with_a_user_name_is_refused(in_process_proxied: Proxied) -> None:
    """Item 12: https://claude.ai@evil.example/cb goes to evil.example."""
    phishing = "https://claude.ai@evil.example/cb"
    http = in_process_proxied.http
    refused = await http.post("/register", json={"client_name": "Claude", "redirect_uris": [phishing]})
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri", refused.text
    honest = await http.post("/register", json={"client_name": "Claude", "redirect_uris": [REDIRECT_URI]})
    assert honest.status_code == 201, honest.text  # the sign-in database is opened at its first write
    # A client an older version registered with such a URI gets no consent page, and no redirect there.
    info = {
        "client_id": "old-client",
        "client_name": "Claude",
        "redirect_uris": [phishing],
        "scope": "memory",
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
    }
    with sqlite3.connect(in_process_proxied.data_dir / AUTH_DB_NAME) as db:
        db.execute(
            "INSERT INTO clients (client_id, secret_hash, info, created_at, approved_at) VALUES (?, NULL, ?, ?, ?)",
            ("old-client", json.dumps(info), time.time(), time.time()),
        )
    answer = await http.get(
        "/authorize", params=authorize_params("old-client", phishing), headers={"X-Forwarded-For": "198.51.100.77"}
    )
    assert answer.status_code == 400 and "evil.example" not in answer.headers.get("location", ""), answer.text
