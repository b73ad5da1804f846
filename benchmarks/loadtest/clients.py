"""The load clients: what they write and ask, how they connect, one tool call with its bookkeeping, and
reading acknowledged writes back. Every phase goes through these, so failures count the same way."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.types import CallToolResult, TextContent
from percentiles import percentile

CALL_TIMEOUT = 120.0
Notes = Iterator[tuple[str, list[str]]]  # memory texts to store, with their tags

SUBJECTS = (
    "The user|My sister Ana|Our team lead Marco|The landlord|Grandma|The dentist|Priya from work|The cat|"
    "Our neighbour Tom|The accountant|My running club|The kids' school|Dad|The client in Lyon"
).split("|")
VERBS = (
    "prefers|decided on|is allergic to|asked about|is learning|wants to avoid|recommended|booked|is worried about|"
    "finished|plans to try|keeps forgetting|loves|cancelled"
).split("|")
OBJECTS = (
    "oat milk in coffee|the Rust rewrite of the billing service|a trip to Lisbon in May|shellfish|learning the cello|"
    "meetings before ten|the blue tent for camping|a standing desk|Kubernetes upgrades|the Thai place on Elm Street|"
    "tax forms due in April|a half marathon in October|dark mode everywhere|the Postgres migration|"
    "piano lessons on Tuesdays|a new laptop with 32 GB|gluten-free bread|the quarterly board deck|sourdough baking|"
    "a dentist appointment on the 14th|the React dashboard"
).split("|")
REASONS = (
    "because it is cheaper|after the last outage|since the doctor said so|for the holidays|to save time|"
    "because the old one broke|at the team's request|for the kids|after reading a review|"
).split("|")
TAGS = "family work health food travel project preference finance hobby decision".split()
QUERIES = (
    "food preferences|what is the user allergic to|current projects at work|travel plans|health|family members|"
    "hobbies and learning|upcoming appointments|decisions about infrastructure|what does Marco want|"
    "money and taxes|sports and running|music lessons|home and neighbours|laptop and hardware|frontend dashboard|"
    "database migration|what did the user cancel|coffee|Lisbon"
).split("|")


def texts(tag: str) -> Notes:
    """Unique, varied memory texts and their tags (identical text would be a 'duplicate', not a new write)."""
    r = random.Random(tag)
    for n in itertools.count(1):
        text = f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(OBJECTS)} {r.choice(REASONS)}".strip()
        yield f"{text} (note {tag}-{n}, {r.randrange(10**6):06d}).", r.sample(TAGS, r.randrange(3))


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


def result_text(result: CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def latency(values: list[float]) -> dict[str, Any]:
    """n, p50, p95 and max in milliseconds; the one latency summary every phase prints and writes."""

    def ms(q: float) -> float | None:
        value = percentile(values, q)
        return None if value is None else round(value * 1000, 1)

    return {"n": len(values), "p50_ms": ms(50), "p95_ms": ms(95), "max_ms": ms(100)}


def latency_text(values: list[float]) -> str:
    s = latency(values)
    return f"n={s['n']} p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms"


class SessionGone(Exception):
    """The session is dead: every further call on it fails at once. The call that found out has counted
    it as a failed request already, so the client only reconnects."""


def session_gone(exc: BaseException) -> SessionGone | None:
    """The SessionGone in `exc`: leaving `async with client` wraps it in an ExceptionGroup (anyio 4)."""
    if isinstance(exc, BaseExceptionGroup):
        return next(filter(None, map(session_gone, exc.exceptions)), None)
    return exc if isinstance(exc, SessionGone) else None


class Session:
    """One MCP client session over streamable HTTP (`kind` "http") or legacy SSE ("sse").

    Legacy SSE is watched: the SDK's `sse_client` sends every message from one task, and when a message
    POST fails it logs "Error in post_writer" and that task ends, so the call in flight never gets an
    answer (it would wait CALL_TIMEOUT) and every later one fails with "Connection closed". The watched
    transport notices the POST that failed and `call_tool` ends the call in flight at once.
    """

    def __init__(self, url: str, kind: str = "http") -> None:
        self.kind = kind
        self.error: str | None = None
        self.dead = asyncio.Event()
        self.endpoint: str | None = None  # the SSE session's message URL, seen on its first POST
        if kind == "http":
            self.client = Client(url + "/mcp", read_timeout_seconds=CALL_TIMEOUT)
        else:
            transport = sse_client(url + "/sse", timeout=5.0, httpx_client_factory=self._http_client)
            self.client = Client(transport, mode="legacy", read_timeout_seconds=CALL_TIMEOUT)

    def _http_client(
        self, headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: Any = None
    ) -> httpx2.AsyncClient:  # as mcp.shared._httpx_utils.create_mcp_http_client, with the watched transport
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, transport=_WatchedTransport(self))

    def failed(self, what: str) -> None:
        self.error = self.error or what[:200]  # the first failure is the cause
        self.dead.set()

    async def __aenter__(self) -> Session:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.__aexit__(*exc)

    async def call_tool(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        if self.kind == "http":
            return await self.client.call_tool(tool, args)
        if self.error is not None:
            raise SessionGone(self.error)
        calling = asyncio.ensure_future(self.client.call_tool(tool, args))
        died = asyncio.ensure_future(self.dead.wait())
        try:
            await asyncio.wait({calling, died}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
            if not calling.done():
                calling.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await calling
        if calling.cancelled():
            raise SessionGone(self.error or "message POST failed")
        return calling.result()


class _WatchedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport, telling its session the first message POST's URL and a POST that failed."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self._session = session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            return await super().handle_async_request(request)
        self._session.endpoint = self._session.endpoint or str(request.url)
        try:
            response = await super().handle_async_request(request)
        except Exception as exc:
            self._session.failed(f"message POST failed: {error_text(exc)}")
            raise
        if response.status_code >= 400:
            self._session.failed(f"message POST answered {response.status_code}")
        return response


@dataclass
class Tally:
    """Latencies, failures and acknowledged writes of one window; rates count the calls done by `deadline`."""

    lat: dict[str, list[float]] = field(default_factory=dict)
    in_window: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    acked: dict[str, str] = field(default_factory=dict)  # memory_id -> content
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    deadline: float | None = None

    def fail(self, op: str, what: str) -> None:
        self.failed[op] += 1
        self.errors[f"{op}: {what[:160]}"] += 1

    def close(self) -> None:
        self.ended = time.monotonic()

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def rate(self, op: str) -> float:
        window = (self.deadline or self.ended or time.monotonic()) - self.started
        return self.in_window[op] / window if window > 0 else 0.0

    def figures(self) -> dict[str, Any]:
        """Rate and latency per operation, and the failures: what the phases print and write."""
        return {
            "seconds": round(self.seconds, 1),
            "ops": {op: {"rate": round(self.rate(op), 2), **latency(v)} for op, v in sorted(self.lat.items())},
            "failed": sum(self.failed.values()),
            "failed_by_op": dict(self.failed),
            "errors": dict(self.errors.most_common(10)),
            "acked": len(self.acked),
        }

    def print(self) -> None:
        for op, values in sorted(self.lat.items()):
            print(f"  {op:<11} {self.rate(op):7.1f} req/s   {latency_text(values)}")
        print(f"  failed requests: {sum(self.failed.values())}")
        for what, count in self.errors.most_common(5):
            print(f"    {count} x {what}")


async def call(session: Session, tally: Tally, op: str, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """One tool call; None when it failed (counted in `tally`). Raises SessionGone when the session died."""
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(session.call_tool(tool, args), CALL_TIMEOUT)
    except SessionGone as exc:
        tally.fail(op, f"session dead: {exc}")
        raise
    except Exception as exc:  # a failed request, whatever the cause
        tally.fail(op, error_text(exc))
        if "Connection closed" in str(exc):
            raise SessionGone(error_text(exc)) from exc
        return None
    if result.is_error or result.structured_content is None:
        tally.fail(op, f"tool error: {result_text(result)}")
        return None
    tally.lat.setdefault(op, []).append(time.perf_counter() - started)
    if tally.deadline is None or time.monotonic() <= tally.deadline:
        tally.in_window[op] += 1
    return result.structured_content


async def store(session: Session, tally: Tally, notes: Notes, op: str = "store") -> str | None:
    """Store one new memory; its id, remembered in `tally.acked` with its text once the server answered."""
    text, tags = next(notes)
    got = await call(session, tally, op, "store_memory", {"content": text, "tags": tags})
    if got is None:
        return None
    if got.get("status") in ("stored", "duplicate") and got.get("memory_id"):
        tally.acked[got["memory_id"]] = text
        return str(got["memory_id"])
    tally.fail(op, f"unexpected answer {got}")
    return None


async def search(session: Session, tally: Tally, rng: random.Random, op: str = "search") -> None:
    await call(session, tally, op, "search_memory", {"query": rng.choice(QUERIES)})


async def _read_back(session: Session, memory_id: str, content: str) -> str:
    """get_memory, up to three tries: "ok", "missing" (not found, or not what was acknowledged) or "unchecked"."""
    for _ in range(3):
        try:
            result = await asyncio.wait_for(session.call_tool("get_memory", {"memory_id": memory_id}), CALL_TIMEOUT)
        except Exception:  # noqa: BLE001 - the server busy or restarting: tried again, then reported as unchecked
            await asyncio.sleep(0.5)
            continue
        if not result.is_error:
            return "ok" if (result.structured_content or {}).get("content") == content else "missing"
        if "not found" in result_text(result).lower():
            return "missing"
    return "unchecked"


async def verify(url: str, acked: dict[str, str], workers: int = 16) -> tuple[list[str], list[str]]:
    """Fetch every acknowledged id with get_memory: (missing, could not check)."""
    found: dict[str, list[str]] = {"ok": [], "missing": [], "unchecked": []}
    ids = iter(list(acked))

    async def worker() -> None:
        async with Session(url) as session:
            for memory_id in ids:
                found[await _read_back(session, memory_id, acked[memory_id])].append(memory_id)

    await asyncio.gather(*(worker() for _ in range(min(workers, max(1, len(acked))))))
    return found["missing"], found["unchecked"]


async def searchable(url: str, acked: dict[str, str], sample: int, rng: random.Random) -> tuple[int, int]:
    """A sample of acknowledged memories searched by their own text: (found, checked)."""
    picked = rng.sample(sorted(acked), min(sample, len(acked)))
    found = 0
    async with Session(url) as session:
        for memory_id in picked:
            got = await call(session, Tally(), "search", "search_memory", {"query": acked[memory_id], "limit": 10})
            found += any(hit.get("memory_id") == memory_id for hit in (got or {}).get("results", []))
    return found, len(picked)
