"""Thousands of random and malformed inputs against a real server (issues 20 and 30): 4,000 under
`--soak` (as many as SYMBIOTE_FUZZ_INPUTS says in a longer one), 400 in a run of the suite, drawn with
the run's seed (tests/conftest.py: volume).

JSON-RPC envelopes that are broken in every way, tool calls with arguments of every wrong type
and size, OAuth endpoints fed random form fields and JSON, and the owner's console (signed in):
its sign-in, pages with random filters, writes with and without the CSRF token, and imports of
hostile lines (deep nesting, huge numbers, wrong types, memories with random fields). The server
must answer each one without a 5xx, a JSON-RPC internal error, a tool's "Internal error" or an
import that fails instead of refusing its lines, stay up, come back to the memory it used
before, and lose none of the memories stored before the barrage. The counts by kind of input and
answer are printed (`pytest -s`); docs/security.md keeps a run's table.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import string
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.auth.support import MCP_HEADERS, OWNER_SECRET, oauth_env
from tests.conftest import MODEL_DIR, ServerProcess, Volume
from tests.console.test_fuzz import FORM, ConsoleInputs, header_bytes, warm_imports
from tests.hardening.test_servers import rss_mib

pytestmark = pytest.mark.server(
    "the transport is the point: hostile bytes on the real HTTP wire, the server keeps serving"
)

FULL = int(os.environ.get("SYMBIOTE_FUZZ_INPUTS", "4000"))  # 10,000 took 110 s of every CI run
SAMPLE = 400
WORKERS = 8
KNOWN = 20


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[tuple[ServerProcess, str]]:
    proc = ServerProcess(
        tmp_path_factory.mktemp("fuzz") / "data", env=oauth_env(SYMBIOTE_TRUST_FORWARDED_HEADERS="1")
    ).start()
    env = {**os.environ, "CHROMADB_PATH": str(proc.data_dir), "SYMBIOTE_MODEL_DIR": str(MODEL_DIR), **oauth_env()}
    created = subprocess.run(
        [sys.executable, "-m", "symbiote", "keys", "create", "fuzz"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    key = next(word for word in created.stdout.split() if word.startswith("sym_key_"))
    yield proc, key
    proc.stop()


TIMES = [
    "0001-01-01",
    "9999-12-31",
    "9999",
    "5000 years ago",
    "99999999999 days ago",
    "last 10000 months",
    "0001-01-01T00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "yesterday",
    "in March 2026",
    "2026-02-30",
    "monday",
]


class Inputs:
    """A seeded source of hostile values."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def text(self, longest: int = 80) -> str:
        r = self.rng
        alphabet = r.choice([string.printable, "\x00\x01\x7f\u202e\ufeff", "é漢字🙂\U0010ffff", "' OR 1=1 --\"*:()"])
        return "".join(r.choice(alphabet) for _ in range(r.randint(0, longest)))

    def value(self, depth: int = 0) -> Any:
        r = self.rng
        kind = r.randrange(11 if depth < 3 else 7)
        if kind == 0:
            return None
        if kind == 1:
            return r.choice([True, False])
        if kind == 2:
            return r.choice([0, -1, 1, 2**31, -(2**63), 2**64, 10**30, r.randint(-1000, 1000)])
        if kind == 3:
            return r.choice([0.5, -0.0, 1e308, -1e-308, 3.14159, float(r.randint(0, 200))])
        if kind in (4, 5):
            return self.text()
        if kind == 6:
            return r.choice(
                [
                    "mem_00000000000000000000",
                    "mem_" + "9" * 20,
                    "",
                    "   ",
                    *TIMES,
                    "9999-12-31T23:59:59Z",
                    "last 99999999 years",
                    "x" * r.choice([201, 2001, 5000]),
                ]
            )
        if kind in (7, 8):
            return [self.value(depth + 1) for _ in range(r.randint(0, 12))]
        return {self.text(12): self.value(depth + 1) for _ in range(r.randint(0, 6))}

    def plausible(self, name: str, spec: dict[str, Any]) -> Any:
        """A value of the right type for a parameter, so that checks past it are reached."""
        r = self.rng
        kinds = [spec.get("type")] + [option.get("type") for option in spec.get("anyOf", [])]
        if name in ("after", "before", "when"):
            return r.choice(TIMES)
        if name.endswith("_id") or name == "id":
            return r.choice(["mem_" + "".join(r.choice(string.digits) for _ in range(20)), self.text(30)])
        if "integer" in kinds:
            return r.randint(1, 12)
        if "number" in kinds:
            return r.random()
        if "boolean" in kinds:
            return r.random() < 0.5
        if "array" in kinds:
            return [self.text(20) for _ in range(r.randint(1, 3))]
        return self.text(r.choice([20, 300]))

    def nearly_valid(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The required arguments with plausible values, and one or two others that may be hostile."""
        r = self.rng
        properties = schema.get("properties", {})
        arguments = {name: self.plausible(name, properties[name]) for name in schema.get("required", [])}
        for name in r.sample(list(properties), min(len(properties), r.randint(1, 2))):
            arguments[name] = self.plausible(name, properties[name]) if r.random() < 0.6 else self.value()
        return arguments

    def arguments(self, schema: dict[str, Any]) -> Any:
        r = self.rng
        if r.random() < 0.4:
            return self.nearly_valid(schema)
        if r.random() < 0.05:
            return self.value()  # not even an object
        properties = schema.get("properties", {})
        arguments = {name: self.value() for name in properties if r.random() < 0.7}
        for name, spec in properties.items():  # often the right type, so the deeper checks are reached
            kinds = [spec.get("type")] + [option.get("type") for option in spec.get("anyOf", [])]
            if r.random() < 0.4:
                if name in ("after", "before", "when"):
                    arguments[name] = r.choice(TIMES)
                elif "integer" in kinds:
                    arguments[name] = r.randint(1, 12)
                elif "number" in kinds:
                    arguments[name] = r.random()
                elif "string" in kinds:
                    arguments[name] = self.text(r.choice([20, 300]))
        if r.random() < 0.2:
            arguments[self.text(10)] = self.value()
        return arguments


def rpc_envelopes(inputs: Inputs, tools: dict[str, dict[str, Any]]) -> list[Callable[[], dict[str, Any]]]:
    r = inputs.rng

    def broken_bytes() -> dict[str, Any]:
        raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        choice = r.randrange(5)
        if choice == 0:
            body = raw[: r.randint(0, len(raw))]
        elif choice == 1:
            body = bytes(r.randrange(256) for _ in range(r.randint(0, 300)))
        elif choice == 2:
            body = b"[" * r.choice([10, 1000, 100_000]) + b"]" * r.choice([0, 10])
        elif choice == 3:
            body = ('{"jsonrpc":"2.0","id":1,"method":"ping","params":' + '{"a":' * 500 + "1" + "}" * 501).encode()
        else:
            body = json.dumps(inputs.value()).encode()
        return {"method": "POST", "url": "/mcp", "content": body}

    def envelope() -> dict[str, Any]:
        message = {
            "jsonrpc": r.choice(["2.0", "1.0", 2, None]),
            "id": inputs.value(),
            "method": r.choice(
                [
                    "tools/call",
                    "tools/list",
                    "initialize",
                    "ping",
                    "resources/read",
                    "prompts/get",
                    "notifications/cancelled",
                    inputs.text(20),
                ]
            ),
            "params": inputs.value(),
        }
        for field in list(message):
            if r.random() < 0.15:
                del message[field]
        body: Any = [message] * r.randint(1, 5) if r.random() < 0.1 else message
        return {"method": "POST", "url": "/mcp", "json": body}

    def tool_call() -> dict[str, Any]:
        name = r.choice(list(tools)) if r.random() < 0.95 else inputs.text(15)
        schema = tools.get(name, {"properties": {}})
        body = {
            "jsonrpc": "2.0",
            "id": r.randint(1, 10**6),
            "method": "tools/call",
            "params": {"name": name, "arguments": inputs.arguments(schema)},
        }
        return {"method": "POST", "url": "/mcp", "json": body}

    return [broken_bytes, envelope, tool_call, tool_call, tool_call]


def oauth_requests(inputs: Inputs) -> list[Callable[[], dict[str, Any]]]:
    r = inputs.rng
    fields = [
        "grant_type",
        "code",
        "code_verifier",
        "redirect_uri",
        "client_id",
        "client_secret",
        "refresh_token",
        "token",
        "token_type_hint",
        "resource",
        "scope",
        "ticket",
        "owner_secret",
        "decision",
        "state",
        "response_type",
        "code_challenge",
        "code_challenge_method",
    ]

    def form() -> dict[str, str]:
        chosen = r.sample(fields, r.randint(0, len(fields)))
        return {
            name: r.choice(
                [
                    inputs.text(60),
                    "authorization_code",
                    "refresh_token",
                    "approve",
                    "S256",
                    "https://" + inputs.text(20),
                    "http://127.0.0.1:9/callback",
                ]
            )
            for name in chosen
        }

    def headers() -> dict[str, bytes]:
        chosen = {"X-Forwarded-For": r.choice(["203.0.113.9", "::1", "garbage", "1.2.3.4, 5.6.7.8:99", "[fe80::1]:5"])}
        chosen["Authorization"] = ""
        if r.random() < 0.3:
            chosen["Authorization"] = r.choice(["Basic " + inputs.text(30), "Basic Og==", "Bearer " + inputs.text(30)])
        return {name: header_bytes(value) for name, value in chosen.items()}

    def token() -> dict[str, Any]:
        return {"method": "POST", "url": r.choice(["/token", "/revoke"]), "data": form(), "headers": headers()}

    def register() -> dict[str, Any]:
        body = (
            inputs.value()
            if r.random() < 0.3
            else {
                "client_name": inputs.value(),
                "redirect_uris": inputs.value() if r.random() < 0.5 else ["https://" + inputs.text(30)],
                "token_endpoint_auth_method": r.choice(
                    ["none", "client_secret_basic", "private_key_jwt", inputs.text(10)]
                ),
                "grant_types": inputs.value(),
                inputs.text(8): inputs.value(),
            }
        )
        return {"method": "POST", "url": "/register", "json": body, "headers": headers()}

    def authorize() -> dict[str, Any]:
        params = form()
        if r.random() < 0.3:
            params["client_id"] = r.choice(
                ["https://127.0.0.1/c.json", "https://169.254.169.254/x", "https://" + inputs.text(20) + "/c"]
            )
        return {"method": r.choice(["GET", "POST"]), "url": "/authorize", "params": params, "headers": headers()}

    def consent() -> dict[str, Any]:
        if r.random() < 0.5:
            return get_consent()
        return {"method": "POST", "url": "/oauth/consent", "data": form(), "headers": headers()}

    def get_consent() -> dict[str, Any]:
        return {"method": "GET", "url": "/oauth/consent", "params": form(), "headers": headers()}

    return [token, register, authorize, consent]


def answer_kind(body: str) -> str:
    """What an answer said: a JSON-RPC error code, a tool error, an OAuth error name, or nothing."""
    if "The import failed" in body:
        return "import internal error"
    try:
        found = json.loads(body)
    except ValueError:
        return "page" if body.lstrip().startswith("<") else "text" if body.strip() else ""
    items = found if isinstance(found, list) else [found]
    kinds = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        error = item.get("error")
        if isinstance(error, dict):
            kinds.add(f"rpc error {error.get('code')}")
        elif isinstance(error, str):
            kinds.add(error)
        elif isinstance(item.get("result"), dict):
            result = item["result"]
            internal = result.get("isError") and "Internal error" in json.dumps(result.get("content"))
            kinds.add("tool internal error" if internal else "tool error" if result.get("isError") else "result")
    return ", ".join(sorted(kinds))


async def test_thousands_of_hostile_inputs(
    target: tuple[ServerProcess, str], sampled: Callable[[int, int], Volume]
) -> None:
    server, key = target
    drawn = sampled(FULL, SAMPLE)
    assert server.proc is not None
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=120, headers=auth) as http:
        known = []
        for i in range(KNOWN):
            text = f"Known memory {i}: the spare key is in blue box number {i * 7}"
            stored = (
                await http.post(
                    "/mcp",
                    json={
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "tools/call",
                        "params": {"name": "store_memory", "arguments": {"content": text}},
                    },
                )
            ).json()
            known.append((json.loads(stored["result"]["content"][0]["text"])["memory_id"], text))
        listed = (await http.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "tools/list"})).json()
        tools = {tool["name"]: tool["inputSchema"] for tool in listed["result"]["tools"]}
        assert (await http.post("/console/signin", data={"secret": OWNER_SECRET}, headers=FORM)).status_code == 303
        csrf = (await http.get("/console/transfer")).text.split('name="csrf-token" content="')[1].split('"')[0]
        await warm_imports(http, csrf)
        baseline = rss_mib(server.proc.pid)

        inputs = Inputs(seed=drawn.seed)
        console = ConsoleInputs(inputs, csrf, TIMES)
        makers = (
            [(f"rpc:{m.__name__}", m) for m in rpc_envelopes(inputs, tools)]
            + [(f"oauth:{m.__name__}", m) for m in oauth_requests(inputs)]
            + [(f"console:{m.__name__}", m) for m in console.requests()]
        )
        plan = [inputs.rng.choice(makers) for _ in range(drawn.count)]
        table: Counter[tuple[str, str]] = Counter()
        failures: list[str] = []
        queue = iter(plan)

        async def worker() -> None:
            for kind, make in queue:
                request = make()
                after = request.pop("after", None)
                response = await http.request(**request)
                if after is not None:
                    after(response)
                body = response.text
                outcome = f"{response.status_code} {answer_kind(body)}".strip()
                table[(kind, outcome)] += 1
                if response.status_code >= 500 or "-32603" in outcome or "internal" in outcome:
                    failures.append(f"{kind} {request!r:.300} -> {response.status_code} {body[:300]}")

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
        for job in console.jobs:  # every import started has finished, its bad lines refused, not failed
            for _ in range(600):
                status = (await http.get(f"/console/import/{job}")).text
                if 'data-state="running"' not in status and 'data-state="waiting"' not in status:
                    break
                await asyncio.sleep(0.2)
            table[
                ("console:import finished", answer_kind(status) or status.split('data-state="')[1].split('"')[0])
            ] += 1
            if "The import failed" in status or 'data-state="running"' in status:
                failures.append(f"import {job}: {status[:300]}")
        after = rss_mib(server.proc.pid)
        print("\n| input | answer | count |\n|---|---|---|")
        for (kind, outcome), count in sorted(table.items()):
            print(f"| {kind} | {outcome} | {count} |")
        print(f"server memory: {baseline:.0f} MiB before, {after:.0f} MiB after")
        assert not failures, "\n".join(failures[:20])
        assert sum(count for (kind, _), count in table.items() if kind != "console:import finished") == drawn.count
        assert server.proc.poll() is None and (await http.get("/health")).json()["status"] == "ok"
        assert after - baseline < 150, (baseline, after)
        for memory_id, text in known:
            fetched = (
                await http.post(
                    "/mcp",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/call",
                        "params": {"name": "get_memory", "arguments": {"memory_id": memory_id}},
                    },
                )
            ).json()
            assert json.loads(fetched["result"]["content"][0]["text"])["content"] == text
