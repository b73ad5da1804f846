"""Brute force against a real server: 1,000 wrong owner secrets and 1,000 random tokens (150 of each
in a run of the suite, the whole under `--soak`: tests/conftest.py, volume).

Zero are accepted, the limiter refuses nearly all guesses before any hashing work, and the
owner's own requests stay fast throughout: their token keeps working, and from their own address
they can still sign in after a single-source attack. Against guesses from many different
addresses the server goes on alert: each address gets one check, every attempt waits a moment,
and the owner, from an address of their own, still signs in with the right secret (never a
flat lock for everyone); existing connections keep working.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from symbiote.auth.owner import SignInLimiter
from tests.auth.support import INITIALIZE, MCP_HEADERS, OAuthFlow, oauth_env
from tests.conftest import ServerProcess, Volume

pytestmark = pytest.mark.server(
    "the real socket is the point: parallel attackers race the limiter over real connections while the owner "
    "works (a server of its own: the attacks leave it on alert)"
)

ATTEMPTS = (1000, 150)  # guesses of each kind: the full volume and the sample
SPREAD = (200, 60)  # addresses in the distributed attack, each costing one owner-secret check (over `global_max`)
PARALLEL = 4  # concurrent attackers: bursts race the limiter, as real ones would


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    # Behind a proxy of ours, X-Forwarded-For tells the attackers' addresses apart.
    env = oauth_env(SYMBIOTE_TRUST_FORWARDED_HEADERS="1")
    proc = ServerProcess(tmp_path_factory.mktemp("bruteforce") / "data", env=env).start()
    yield proc
    proc.stop()


async def attack(
    base: str, requests: list[dict], owner_token: str, parallel: int = PARALLEL
) -> tuple[dict[int, int], list[float]]:
    """Send every request (PARALLEL workers) while the owner keeps using the server; the status
    counts and the owner's latencies (seconds)."""
    statuses: dict[int, int] = {}
    owner_latencies: list[float] = []
    done = asyncio.Event()
    queue = iter(requests)
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:

        async def worker() -> None:
            for request in queue:
                response = await http.request(**request)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        async def owner() -> None:
            async with httpx.AsyncClient(base_url=base, timeout=30) as mine:
                while not done.is_set():
                    started = time.perf_counter()
                    response = await mine.post(
                        "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {owner_token}"}
                    )
                    assert response.status_code == 200
                    owner_latencies.append(time.perf_counter() - started)
                    await asyncio.sleep(0.05)

        owner_task = asyncio.create_task(owner())
        await asyncio.gather(*(worker() for _ in range(parallel)))
        done.set()
        await owner_task
    return statuses, owner_latencies


def _checked_within(seconds: float) -> int:
    """How many wrong secrets one address may have checked in `seconds`: the free ones, then one
    each time its backoff (1 s, 2 s, 4 s ...) runs out (a loaded machine sends the guesses slowly)."""
    checked, waited, delay = SignInLimiter.free_failures, 0.0, 1.0
    while waited + delay <= seconds:
        waited, delay, checked = waited + delay, delay * 2, checked + 1
    return checked


async def test_a_thousand_wrong_secrets_and_random_tokens_get_nothing(
    oauth_server: ServerProcess, sampled: Callable[[int, int], Volume]
) -> None:
    attempts, spread_count = sampled(*ATTEMPTS).count, sampled(*SPREAD).count
    flow = OAuthFlow(oauth_server.base_url)
    _owner_client, owner_tokens = flow.login("Owner's Claude")
    attacker = flow.register("Totally Claude")
    ticket = flow.start(attacker).ticket

    # 1. One address, `attempts` guesses as fast as it can send them.
    guesses = [
        {
            "method": "POST",
            "url": "/oauth/consent",
            "headers": {"X-Forwarded-For": "203.0.113.66"},
            "data": {"ticket": ticket, "owner_secret": secrets.token_urlsafe(24), "decision": "approve"},
        }
        for _ in range(attempts)
    ]
    started = time.perf_counter()
    statuses, latencies = await attack(oauth_server.base_url, guesses, owner_tokens["access_token"])
    single_source_s = time.perf_counter() - started
    assert 302 not in statuses and sum(statuses.values()) == attempts
    checked = _checked_within(single_source_s) + 1  # checked; everything else refused unchecked
    assert statuses.get(401, 0) <= checked, (statuses, single_source_s)
    assert statuses[429] >= attempts - checked
    assert latencies and max(latencies) < 2.0, latencies
    # The owner, from their own address, signs in straight away.
    owner_ticket = flow.start(attacker).ticket
    approved = flow.consent(owner_ticket, source="198.51.100.20")
    assert approved.status_code == 302 and "code=" in approved.headers["location"]

    # 2. `attempts` random bearer tokens (and API-key-shaped ones) against /mcp.
    forged = [
        {
            "method": "POST",
            "url": "/mcp",
            "json": INITIALIZE,
            "headers": {**MCP_HEADERS, "Authorization": f"Bearer {prefix}{secrets.token_urlsafe(32)}"},
        }
        for prefix in ("sym_at_", "sym_key_", "")
        for _ in range(attempts // 3 + 1)
    ][:attempts]
    statuses, latencies = await attack(oauth_server.base_url, forged, owner_tokens["access_token"])
    assert statuses == {401: attempts}
    assert max(latencies) < 2.0, latencies

    # 3. Guesses each from a different address: the server goes on alert, each address is checked
    # once, and none gets in.
    ticket = flow.start(attacker).ticket
    spread = [
        {
            "method": "POST",
            "url": "/oauth/consent",
            "headers": {"X-Forwarded-For": f"10.{i // 250}.{i % 250}.7"},
            "data": {"ticket": ticket, "owner_secret": secrets.token_urlsafe(24), "decision": "approve"},
        }
        for i in range(spread_count)
    ]
    statuses, latencies = await attack(oauth_server.base_url, spread, owner_tokens["access_token"], parallel=32)
    assert 302 not in statuses and statuses.get(401, 0) <= spread_count
    assert max(latencies) < 2.0, latencies
    # The owner is slowed down, not locked out: from their own address the right secret gets in.
    started = time.perf_counter()
    approved = flow.consent(flow.start(attacker).ticket, source="198.51.100.20")
    waited = time.perf_counter() - started
    assert approved.status_code == 302 and "code=" in approved.headers["location"], approved.text
    assert SignInLimiter.alert_delay <= waited < 10, waited
    # A new address on alert gets one check, then waits.
    assert flow.consent(flow.start(attacker).ticket, secret="wrong guess", source="198.51.100.77").status_code == 401
    assert flow.consent(flow.start(attacker).ticket, secret="wrong guess", source="198.51.100.77").status_code == 429
    assert flow.mcp_status(owner_tokens["access_token"]) == 200
    assert httpx.get(f"{oauth_server.base_url}/health", timeout=5).status_code == 200
    flow.close()
    print(f"\n{attempts} single-source guesses answered in {single_source_s:.1f} s")
