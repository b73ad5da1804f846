"""The console's part of the hostile inputs (tests/hardening/test_fuzz.py): requests at its
sign-in, pages, writes and imports, and the import that warms the server up first. No tests live here."""

from __future__ import annotations

import asyncio
import json
import string
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

if TYPE_CHECKING:
    from tests.hardening.test_fuzz import Inputs

FORM = {"Content-Type": "application/x-www-form-urlencoded"}  # the fuzz client's default type is JSON, for /mcp


def header_bytes(value: str) -> bytes:
    """Raw bytes, as an attacker sends them; only what HTTP/1.1 cannot carry in a header is left out."""
    return bytes(b for b in value.encode("utf-8") if b >= 0x20 and b != 0x7F).strip()


class ConsoleInputs:
    """Requests at the console, signed in; `csrf` is the session's token, `jobs` the imports made so far."""

    def __init__(self, inputs: Inputs, csrf: str, times: list[str]) -> None:
        self.inputs = inputs
        self.csrf = csrf
        self.times = times
        self.jobs: list[str] = []

    def token(self) -> str:
        r = self.inputs.rng
        return self.csrf if r.random() < 0.7 else r.choice(["", "forged", self.inputs.text(40)])

    def line(self) -> bytes:
        r, inputs = self.inputs.rng, self.inputs
        choice = r.randrange(8)
        if choice == 0:
            return b"[" * r.choice([1000, 100_000]) + b"]" * r.choice([0, 1000])
        if choice == 1:
            return (
                '{"kind":"memory","content":"n","metadata":{"confidence":' + "9" * r.choice([400, 5000]) + "}}"
            ).encode()
        if choice == 2:
            return json.dumps(
                {
                    "format": "symbiote-memories",
                    "version": inputs.value(),
                    "counts": inputs.value(),
                    "dimension": inputs.value(),
                    "vectors": inputs.value(),
                }
            ).encode()
        if choice == 3:
            return bytes(r.randrange(256) for _ in range(r.randint(0, 200)))
        if choice == 4:
            return json.dumps(
                {
                    "kind": "turn",
                    "conversation_id": inputs.value(),
                    "turn_index": inputs.value(),
                    "role": inputs.value(),
                    "text": inputs.value(),
                    "ts": inputs.value(),
                }
            ).encode()
        if choice == 5:
            return json.dumps(
                {
                    "type": r.choice(["entity", "relation"]),
                    "name": inputs.value(),
                    "entityType": inputs.value(),
                    "observations": inputs.value(),
                    "from": inputs.value(),
                    "to": inputs.value(),
                    "relationType": inputs.value(),
                }
            ).encode()
        record = {"kind": "memory", "content": inputs.text(120) if r.random() < 0.8 else inputs.value()}
        for name in r.sample(["id", "tags", "type", "metadata", "created", "updated", "vectors"], r.randint(0, 4)):
            record[name] = r.choice(
                ["mem_" + "".join(r.choice(string.digits) for _ in range(20)), *self.times, inputs.value()]
            )
        return json.dumps(record).encode()

    def requests(self) -> list[Callable[[], dict[str, Any]]]:
        r, inputs = self.inputs.rng, self.inputs

        def signin() -> dict[str, Any]:
            headers = {**FORM, "X-Forwarded-For": r.choice(["203.0.113.77", "2001:db8:77::1", "garbage"])}
            return {"method": "POST", "url": "/console/signin", "data": {"secret": inputs.text(60)}, "headers": headers}

        def page() -> dict[str, Any]:
            path = r.choice(
                [
                    "/console/",
                    "/console/history",
                    "/console/stats",
                    "/console/tags",
                    "/console/transfer",
                    "/console/signin",
                    "/console/export",
                    f"/console/memories/{quote(inputs.text(30), safe='')}",
                    "/console/memories/mem_" + "1" * 20,
                ]
            )
            names = [
                "q",
                "tag",
                "type",
                "from",
                "to",
                "page",
                "conversation",
                "history",
                "vectors",
                "saved",
                "deleted",
                "gone",
            ]
            params = {name: str(inputs.value()) for name in r.sample(names, r.randint(0, 5))}
            return {"method": "GET", "url": path, "params": params}

        def write() -> dict[str, Any]:
            path = r.choice(
                [
                    "/console/delete",
                    "/console/history/delete",
                    "/console/memories/mem_" + "".join(r.choice(string.digits) for _ in range(20)),
                    f"/console/memories/{quote(inputs.text(20), safe='')}",
                    "/console/signout",
                ]
            )
            data = {"csrf": self.token() if path != "/console/signout" else inputs.text(20)}
            for name in r.sample(["ids", "confirm", "content", "tags", "conversation"], r.randint(0, 5)):
                data[name] = r.choice(["yes", "mem_" + "2" * 20, inputs.text(200)])
            return {"method": "POST", "url": path, "data": data, "headers": FORM}

        def transfer() -> dict[str, Any]:
            headers = {"X-CSRF-Token": header_bytes(self.token())}
            job = r.choice(self.jobs) if self.jobs and r.random() < 0.9 else quote(inputs.text(16), safe="")
            step = r.randrange(6)
            if step == 0 or not self.jobs:
                return {
                    "method": "POST",
                    "url": "/console/import",
                    "headers": headers,
                    "after": lambda answer: (
                        self.jobs.append(answer.json()["job"]) if answer.status_code == 200 else None
                    ),
                }
            if step in (1, 2, 3):
                body = b"\n".join(self.line() for _ in range(r.randint(1, 20))) + b"\n"
                return {"method": "POST", "url": f"/console/import/{job}/part", "content": body, "headers": headers}
            if step == 4:
                query = {
                    "dry_run": r.choice(["0", "1", inputs.text(3)]),
                    "replace": r.choice(["0", "1", inputs.text(3)]),
                }
                return {"method": "POST", "url": f"/console/import/{job}/start", "params": query, "headers": headers}
            return {"method": "GET", "url": f"/console/import/{job}"}

        return [signin, page, write, transfer]


async def warm_imports(http: httpx.AsyncClient, csrf: str) -> None:
    """Slices of the longest texts (in tokens) imported through the console, as the barrage's imports
    will: the model's working memory for them is not a leak."""
    headers = {"X-CSRF-Token": csrf}
    lines = [json.dumps({"kind": "memory", "content": f"Warm-up {i}: " + "漢🙂é字\U0010ffff" * 30}) for i in range(48)]
    job = (await http.post("/console/import", headers=headers)).json()["job"]
    await http.post(f"/console/import/{job}/part", content="\n".join(lines).encode(), headers=headers)
    await http.post(f"/console/import/{job}/start", headers=headers)
    while 'data-state="done"' not in (await http.get(f"/console/import/{job}")).text:
        await asyncio.sleep(0.2)
