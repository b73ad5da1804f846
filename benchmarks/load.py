"""Many clients at once against a real `symbiote serve`: load, heavy batch, churn, kill -9.

Usage:
    .venv/bin/python benchmarks/load.py                       # the full run (10-minute mixed load)
    .venv/bin/python benchmarks/load.py --duration 60 --cycles 2000 --kill-rounds 5   # a quick run
    .venv/bin/python benchmarks/load.py --phases kill --kill-rounds 20                 # one part only
    .venv/bin/python benchmarks/load.py --source-rev HEAD ...   # serve a commit, not the working tree

Starts its own server (`.venv/bin/symbiote serve --port N`, a free loopback port, a temporary
CHROMADB_PATH unless --data is given) and runs, in order, the phases named in --phases:

  load    100 streamable-HTTP clients (`Client(url + "/mcp")`) plus 20 legacy-SSE clients
          (`Client(sse_client(url + "/sse"), mode="legacy")`) connect; server RSS idle vs. all
          connected; then the 100 HTTP clients search only (--rate-seconds), store only
          (--rate-seconds), and all 120 run mixed store/search for --duration seconds.
          Every acknowledged memory id is fetched back with get_memory afterwards.
          A client whose session dies counts one failed request, is listed with the time, and
          reconnects. For legacy SSE that is a message POST that failed: the SDK's `sse_client`
          then logs "Error in post_writer" and fails every later call with "Connection closed"
          (the call in flight never gets an answer), so the POSTs are watched and the call in
          flight ends at once. --client-log FILE keeps the SDK client's warnings and tracebacks.
  batch   One client stores --batch memories as fast as it can (--batch-concurrency calls in
          flight) while another runs memory_stats and search_memory back to back; p50/p95 of
          those, and the event-loop lag (see below), idle baseline vs. during the batch.
  cycles  --cycles connect/initialize/close cycles (a share of them legacy SSE): server RSS growth,
          and whether SSE sessions are released (a closed session's message URL must answer 404;
          `active_sessions` from /health when the server reports it).
  kill    Round 0: SIGTERM during concurrent writers (exit code, time to exit, errors logged
          while shutting down); then --kill-rounds rounds of `kill -9` at a random moment during
          concurrent writers (HTTP and SSE). After each, restart on the same directory: health
          must say store "ready", the boot log must be free of errors, every acknowledged write
          must be there (get_memory, same content) and a sample findable by search.
  At the end every memory acknowledged in any phase is fetched once more.

Event-loop lag is measured from outside, in a separate process: the latency of
`GET /__lag_probe` (a path no route serves, so the answer is a 404 from the router that touches
neither the store nor a worker thread), sent every 20 ms over a keep-alive connection. Lag is
that latency minus its idle median. /health latency is reported too (it counts memories on a
store thread, so it also shows queueing for the store).

No assertions: it prints figures (and --json FILE writes them). Exit status 1 when any
acknowledged write was lost, 0 otherwise. The machine is shared, so every figure is printed
with the load average at the time it was taken.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import logging
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import httpx
import httpx2
from mcp import Client
from mcp.client.sse import sse_client

from ports import free_port  # this directory is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
CALL_TIMEOUT = 120.0
SSE_TIMEOUT = 5.0  # sse_client's connect/write/pool timeout for the message POSTs (the SDK's default)
JSON = {"content-type": "application/json"}
logging.getLogger("mcp").setLevel(logging.CRITICAL)  # a client whose server was killed logs stack traces
TICKS = os.sysconf("SC_CLK_TCK")


# -- small helpers -------------------------------------------------------------------------------



def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


def mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1_048_576:.1f} MB"


def lat_summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50_ms": None if not values else round(pct(values, 50) * 1000, 1),  # type: ignore[operator]
        "p95_ms": None if not values else round(pct(values, 95) * 1000, 1),  # type: ignore[operator]
        "max_ms": None if not values else round(max(values) * 1000, 1),
    }


def lat_text(values: list[float]) -> str:
    if not values:
        return "n=0"
    return f"n={len(values)} p50 {ms(pct(values, 50))} p95 {ms(pct(values, 95))} max {ms(max(values))}"


SUBJECTS = [
    "The user",
    "My sister Ana",
    "Our team lead Marco",
    "The landlord",
    "Grandma",
    "The dentist",
    "Priya from work",
    "The cat",
    "Our neighbour Tom",
    "The accountant",
    "My running club",
    "The kids' school",
    "Dad",
    "The client in Lyon",
]
VERBS = [
    "prefers",
    "decided on",
    "is allergic to",
    "asked about",
    "is learning",
    "wants to avoid",
    "recommended",
    "booked",
    "is worried about",
    "finished",
    "plans to try",
    "keeps forgetting",
    "loves",
    "cancelled",
]
OBJECTS = [
    "oat milk in coffee",
    "the Rust rewrite of the billing service",
    "a trip to Lisbon in May",
    "shellfish",
    "learning the cello",
    "meetings before ten",
    "the blue tent for camping",
    "a standing desk",
    "Kubernetes upgrades",
    "the Thai place on Elm Street",
    "tax forms due in April",
    "a half marathon in October",
    "dark mode everywhere",
    "the Postgres migration",
    "piano lessons on Tuesdays",
    "a new laptop with 32 GB",
    "gluten-free bread",
    "the quarterly board deck",
    "sourdough baking",
    "a dentist appointment on the 14th",
    "the React dashboard",
]
REASONS = [
    "because it is cheaper",
    "after the last outage",
    "since the doctor said so",
    "for the holidays",
    "to save time",
    "because the old one broke",
    "at the team's request",
    "for the kids",
    "after reading a review",
    "",
]
TAGS = ["family", "work", "health", "food", "travel", "project", "preference", "finance", "hobby", "decision"]
QUERIES = [
    "food preferences",
    "what is the user allergic to",
    "current projects at work",
    "travel plans",
    "health",
    "family members",
    "hobbies and learning",
    "upcoming appointments",
    "decisions about infrastructure",
    "what does Marco want",
    "money and taxes",
    "sports and running",
    "music lessons",
    "home and neighbours",
    "laptop and hardware",
    "frontend dashboard",
    "database migration",
    "what did the user cancel",
    "coffee",
    "Lisbon",
]


class Texts:
    """Unique, varied memory texts (identical text would be a 'duplicate', not a new write)."""

    def __init__(self, tag: str) -> None:
        self._tag = tag
        self._n = 0
        self._rng = random.Random(tag)

    def next(self) -> tuple[str, list[str]]:
        self._n += 1
        r = self._rng
        text = f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(OBJECTS)} {r.choice(REASONS)}".strip()
        text += f" (note {self._tag}-{self._n}, {r.randrange(10**6):06d})."
        return text, r.sample(TAGS, r.randrange(3))


# -- the server process --------------------------------------------------------------------------


class Server:
    """`symbiote serve` as a child process on a free loopback port."""

    def __init__(self, data: Path, log_path: Path, log_level: str, source: Path | None = None) -> None:
        self.data = data
        self.source = source
        self.log_path = log_path
        self.port = free_port()
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.boots = 0
        self._log_mark = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> float:
        """Start and wait for health store == 'ready'; returns seconds to ready. Raises if it never is."""
        env = {
            **os.environ,
            "CHROMADB_PATH": str(self.data),
            "HF_HUB_OFFLINE": "1",
            "LOG_LEVEL": self.log_level,
            "SYMBIOTE_MODEL_DIR": os.environ.get("SYMBIOTE_MODEL_DIR", str(ROOT / "models" / "all-MiniLM-L6-v2")),
        }
        if self.source is not None:  # serve this copy of the package instead of the working tree
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.source), os.environ.get("PYTHONPATH")]))
        self._log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            log.write(f"\n===== load.py: boot {self.boots + 1} =====\n".encode())
            log.flush()
            started = time.monotonic()
            self.proc = subprocess.Popen(
                [str(ROOT / ".venv" / "bin" / "symbiote"), "serve", "--port", str(self.port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.boots += 1
        health: dict[str, Any] = {}
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log_path}")
            with contextlib.suppress(httpx.HTTPError, ValueError):
                health = httpx.get(self.url + "/health", timeout=5).json()
                if health.get("store") in ("ready", "not_created"):
                    return time.monotonic() - started
                if health.get("store") == "unavailable":
                    raise RuntimeError(f"store unavailable after restart: {health}")
            time.sleep(0.1)
        raise RuntimeError(f"server not ready within {timeout:.0f} s (last health {health}); see {self.log_path}")

    def health(self) -> dict[str, Any]:
        return httpx.get(self.url + "/health", timeout=30).json()

    def _tree(self) -> list[int]:
        """The server and its descendants (the embedded store runs in a child process)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        tree = [self.proc.pid]
        for pid in tree:
            tree.extend(child for child, parent in parents.items() if parent == pid)
        return tree

    def rss(self) -> int | None:
        """RSS of the server and its store process together."""
        total = 0
        for pid in self._tree():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total or None

    def cpu_seconds(self) -> float | None:
        """CPU time of the server and its store process together."""
        total, seen = 0.0, False
        for pid in self._tree():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / TICKS
                seen = True
            except (OSError, IndexError, ValueError):
                pass
        return total if seen else None

    def boot_log(self) -> str:
        """The log written since the last start."""
        with self.log_path.open("rb") as log:
            log.seek(self._log_mark)
            return log.read().decode(errors="replace")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def terminate(self, timeout: float = 60.0) -> int | None:
        """SIGTERM and wait; returns the exit code (None if it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class RssSampler:
    """Samples the server's RSS once a second; keeps the peak per named window."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.peaks: dict[str, int] = {}
        self.window = "start"
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            value = self.server.rss()
            if value is not None:
                self.peaks[self.window] = max(self.peaks.get(self.window, 0), value)
            await asyncio.sleep(1.0)

    def __enter__(self) -> Self:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


# -- the lag probe (its own process, so the load generator's own loop does not skew it) --------


def probe_main(url: str, interval: float) -> None:
    """Hidden mode: GET /__lag_probe and /health alternately until stdin closes; print latencies."""
    parsed = httpx.URL(url)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    out: dict[str, list[float]] = {"lag_probe": [], "health": []}
    errors = 0
    conn: http.client.HTTPConnection | None = None
    turn = 0
    deadline = time.monotonic() + 4 * 3600  # bounded even if nobody closes stdin
    while not stop.is_set() and time.monotonic() < deadline:
        path, key = ("/health", "health") if turn % 5 == 4 else ("/__lag_probe", "lag_probe")
        turn += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection(parsed.host, parsed.port, timeout=30)
            started = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            out[key].append(time.perf_counter() - started)
        except (OSError, http.client.HTTPException):
            errors += 1
            conn = None
        stop.wait(interval)
    print(json.dumps({**out, "errors": errors}))


class LagProbe:
    def __init__(self, url: str, interval: float = 0.02) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--probe", url, "--probe-interval", str(interval)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def finish(self) -> dict[str, Any]:
        out, _ = self.proc.communicate(b"", timeout=60)
        return json.loads(out)


# -- clients and their bookkeeping ---------------------------------------------------------------


@dataclass
class Tally:
    """Latencies, failures and acknowledged writes of one window."""

    name: str
    lat: dict[str, list[float]] = field(default_factory=dict)
    ops: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    acked: dict[str, str] = field(default_factory=dict)  # memory_id -> content
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    deadline: float | None = None  # rates count what completed by then
    in_window: Counter[str] = field(default_factory=Counter)
    timeouts: list[str] = field(default_factory=list)  # wall-clock times, to find them in the server log

    def fail(self, op: str, what: str) -> None:
        self.failed[op] += 1
        self.errors[f"{op}: {what[:160]}"] += 1

    def close(self) -> None:
        self.ended = time.monotonic()

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def rate(self, op: str) -> float:
        if self.deadline is not None:
            window = self.deadline - self.started
            return self.in_window[op] / window if window > 0 else 0.0
        return self.ops[op] / self.seconds if self.seconds > 0 else 0.0


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


class SessionGone(Exception):
    """The client's session is dead ("Connection closed"): every further call on it fails at once.

    `counted`: the call that found it dead is counted as a failed request in its tally already.
    """

    counted = False


def session_gone(exc: BaseException) -> SessionGone | None:
    """The SessionGone in `exc`: leaving `async with client` wraps it in an ExceptionGroup (anyio 4)."""
    if isinstance(exc, SessionGone):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := session_gone(inner)) is not None:
                return found
    return None


async def _call_tool(client: Client, tool: str, args: dict[str, Any]) -> Any:
    """`client.call_tool`, but a legacy-SSE session whose message POST failed raises SessionGone at once.

    The SDK's `sse_client` sends every message from one task (`post_writer`); when a POST fails
    it logs "Error in post_writer" and that task ends: the call whose POST failed never gets an
    answer (it would wait CALL_TIMEOUT) and every later call fails with "Connection closed".
    """
    watch: SessionWatch | None = getattr(client, "_load_watch", None)
    if watch is None:
        return await client.call_tool(tool, args)
    if watch.error is not None:
        raise SessionGone(watch.error)
    calling = asyncio.ensure_future(client.call_tool(tool, args))
    died = asyncio.ensure_future(watch.dead.wait())
    try:
        await asyncio.wait({calling, died}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        died.cancel()
        if not calling.done():
            calling.cancel()
            with contextlib.suppress(BaseException):
                await calling
    if calling.done() and not calling.cancelled():
        return calling.result()
    raise SessionGone(watch.error or "message POST failed")


async def call(client: Client, tally: Tally | None, op: str, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """One tool call; None when it failed (counted in `tally`). Raises SessionGone when the session died."""
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(_call_tool(client, tool, args), CALL_TIMEOUT)
    except SessionGone as exc:
        if tally is not None:
            tally.fail(op, f"session dead: {exc}")
            exc.counted = True
        raise
    except Exception as exc:  # a failed request, whatever the cause
        if tally is not None:
            tally.fail(op, _err(exc))
            if isinstance(exc, TimeoutError):
                tally.timeouts.append(
                    f"{op} sent {time.strftime('%H:%M:%S', time.localtime(time.time() - CALL_TIMEOUT))}"
                )
        if tally is not None and "Connection closed" in str(exc):
            gone = SessionGone(_err(exc))
            gone.counted = True
            raise gone from exc
        return None
    if result.is_error or result.structured_content is None:
        if tally is not None:
            text = getattr(result.content[0], "text", "") if result.content else ""
            tally.fail(op, f"tool error: {text}")
        return None
    if tally is not None:
        tally.ops[op] += 1
        if tally.deadline is None or time.monotonic() <= tally.deadline:
            tally.in_window[op] += 1
        tally.lat.setdefault(op, []).append(time.perf_counter() - started)
    return result.structured_content


async def store(client: Client, tally: Tally, texts: Texts, op: str = "store") -> str | None:
    text, tags = texts.next()
    got = await call(client, tally, op, "store_memory", {"content": text, "tags": tags})
    if got is None:
        return None
    if got.get("status") in ("stored", "duplicate") and got.get("memory_id"):
        tally.acked[got["memory_id"]] = text
        return str(got["memory_id"])
    tally.fail(op, f"unexpected answer {got}")
    return None


async def search(client: Client, tally: Tally, rng: random.Random, op: str = "search") -> None:
    await call(client, tally, op, "search_memory", {"query": rng.choice(QUERIES)})


def http_client(url: str) -> Client:
    return Client(url + "/mcp", read_timeout_seconds=CALL_TIMEOUT)


class SessionWatch:
    """Notices, for one legacy-SSE client, the message POST that failed (see `_call_tool`)."""

    def __init__(self) -> None:
        self.dead = asyncio.Event()
        self.error: str | None = None

    def failed(self, what: str) -> None:
        if self.error is None:
            self.error = what[:200]
            self.dead.set()


class _WatchedTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport, reporting a message POST that raised or was refused to a SessionWatch."""

    def __init__(self, watch: SessionWatch) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._watch = watch

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            if request.method == "POST":
                self._watch.failed(f"message POST failed: {_err(exc)}")
            raise
        if request.method == "POST" and response.status_code >= 400:
            self._watch.failed(f"message POST answered {response.status_code}")
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def legacy_sse_client(url: str) -> Client:
    watch = SessionWatch()

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:  # as mcp.shared._httpx_utils.create_mcp_http_client, with the watched transport
        kwargs: dict[str, Any] = {"timeout": timeout, "transport": _WatchedTransport(watch)}
        if headers is not None:
            kwargs["headers"] = headers
        if auth is not None:
            kwargs["auth"] = auth
        return httpx2.AsyncClient(**kwargs)

    client = Client(
        sse_client(url + "/sse", timeout=SSE_TIMEOUT, httpx_client_factory=factory),
        mode="legacy",
        read_timeout_seconds=CALL_TIMEOUT,
    )
    client._load_watch = watch  # type: ignore[attr-defined]  # read by _call_tool
    return client


class EndpointLog(logging.Handler):
    """Collects the message URL of every legacy-SSE session the SDK client opens.

    `sse_client(on_session_created=...)` only sees ids passed as a `session_id` query parameter;
    the client logs every endpoint URL it receives, whatever its form, at debug level.
    """

    PREFIX = "Received endpoint URL: "

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.urls: list[str] = []
        self._logger = logging.getLogger("mcp.client.sse")

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(self.PREFIX):
            self.urls.append(message[len(self.PREFIX) :])

    def __enter__(self) -> Self:
        self._logger.addHandler(self)
        self._logger.setLevel(logging.DEBUG)
        self._logger.propagate = False
        return self

    def __exit__(self, *_exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(logging.NOTSET)
        self._logger.propagate = True


async def verify(url: str, acked: dict[str, str], workers: int = 16) -> tuple[list[str], list[str]]:
    """Fetch every id with get_memory: (missing, could_not_check)."""
    missing: list[str] = []
    unchecked: list[str] = []
    queue: asyncio.Queue[str] = asyncio.Queue()
    for memory_id in acked:
        queue.put_nowait(memory_id)

    async def worker() -> None:
        async with http_client(url) as client:
            while True:
                try:
                    memory_id = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                for attempt in range(3):
                    try:
                        result = await asyncio.wait_for(
                            client.call_tool("get_memory", {"memory_id": memory_id}), CALL_TIMEOUT
                        )
                    except Exception:
                        if attempt == 2:
                            unchecked.append(memory_id)
                        await asyncio.sleep(0.5)
                        continue
                    if result.is_error:
                        text = getattr(result.content[0], "text", "") if result.content else ""
                        if "not found" in text.lower():
                            missing.append(memory_id)
                            break
                        if attempt == 2:
                            unchecked.append(memory_id)
                        continue
                    content = (result.structured_content or {}).get("content")
                    if content != acked[memory_id]:
                        missing.append(memory_id)  # there, but not what was acknowledged
                    break

    await asyncio.gather(*(worker() for _ in range(min(workers, max(1, len(acked))))))
    return missing, unchecked


async def searchable(url: str, acked: dict[str, str], sample: int, rng: random.Random) -> tuple[int, int]:
    """A sample of acknowledged memories searched by their own text: (found, checked)."""
    picked = rng.sample(sorted(acked), min(sample, len(acked)))
    found = 0
    async with http_client(url) as client:
        for memory_id in picked:
            got = await call(client, None, "search", "search_memory", {"query": acked[memory_id], "limit": 10})
            if got and any(hit.get("memory_id") == memory_id for hit in got.get("results", [])):
                found += 1
    return found, len(picked)


def header(title: str) -> None:
    print(f"\n=== {title}   [load average {loadavg()}]", flush=True)


# -- phase: 100 HTTP + 20 SSE clients ------------------------------------------------------------


@dataclass
class Gate:
    """What the long-lived clients do next; they wait on these events in order."""

    connected: int = 0
    connect_failed: int = 0
    broken: int = 0
    broken_by_kind: Counter[str] = field(default_factory=Counter)
    losses: list[str] = field(default_factory=list)  # "HH:MM:SS kind+index: why", to find in the server log
    finished: Counter[str] = field(default_factory=Counter)
    events: dict[str, asyncio.Event] = field(default_factory=dict)
    deadline: float = 0.0
    tally: Tally | None = None

    def event(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())


async def long_lived_client(kind: str, index: int, url: str, gate: Gate, store_share: float) -> None:
    """One client for the whole load phase; a client whose session breaks counts a failure and reconnects."""
    rng = random.Random(f"{kind}-{index}")
    texts = Texts(f"{kind}{index}")
    phases = ["search", "store", "mixed", "close"]
    step = 0
    counted = False
    for _attempt in range(30):  # bounded reconnects
        client = http_client(url) if kind == "http" else legacy_sse_client(url)
        in_tally = False  # whether the failure is counted already (as the call that found the session dead)
        try:
            async with client:
                if not counted:
                    await call(client, None, "ping", "memory_stats", {})  # one real request each
                    gate.connected += 1
                    counted = True
                while step < len(phases):
                    phase = phases[step]
                    await gate.event(phase).wait()
                    if phase == "close":
                        return
                    tally = gate.tally
                    assert tally is not None
                    while (phase == "mixed" or kind == "http") and time.monotonic() < gate.deadline:
                        suffix = f"/{kind}" if phase == "mixed" else ""
                        if phase == "search" or (phase == "mixed" and rng.random() >= store_share):
                            await search(client, tally, rng, "search" + suffix)
                        else:
                            await store(client, tally, texts, "store" + suffix)
                    gate.finished[phase] += 1
                    step += 1
                    await gate.event(phase + "-done").wait()
            # leaving `async with` without reaching "close": the SDK ended the session under us
            # (a transport error cancels the call in flight instead of raising it)
            what = "client session ended unexpectedly (call in flight cancelled)"
        except Exception as exc:
            gone = session_gone(exc)
            what = f"session dead: {gone}"[:200] if gone is not None else _err(exc)[:200]
            in_tally = gone is not None and gone.counted
        if not counted:
            gate.connect_failed += 1
            print(f"  client {kind}{index} could not connect: {what}", flush=True)
            return
        gate.broken += 1
        gate.broken_by_kind[kind] += 1
        gate.losses.append(f"{time.strftime('%H:%M:%S')} {kind}{index}: {what}")
        if gate.tally is not None and not in_tally:
            gate.tally.fail(f"session/{kind}", what)
        print(f"  client {kind}{index} broke ({what}); reconnecting", flush=True)
    gate.finished["gave-up"] += 1


async def phase_load(
    args: argparse.Namespace, server: Server, sampler: RssSampler, out: dict[str, Any]
) -> dict[str, str]:
    url = server.url
    header(f"load: {args.http_clients} streamable-HTTP + {args.sse_clients} legacy-SSE clients")
    # warm: the model loaded and one write done, so idle RSS is the steady idle state
    warm = Tally("warm")
    async with http_client(url) as client:
        await store(client, warm, Texts("warm"))
        await search(client, warm, random.Random(0))
    await asyncio.sleep(3)
    rss_idle = server.rss()
    print(f"server RSS idle (model loaded, no client connected): {mb(rss_idle)}")

    gate = Gate()
    total = args.http_clients + args.sse_clients
    tasks = []
    for i in range(args.http_clients):
        tasks.append(asyncio.create_task(long_lived_client("http", i, url, gate, args.store_share)))
    for i in range(args.sse_clients):
        tasks.append(asyncio.create_task(long_lived_client("sse", i, url, gate, args.store_share)))
    connect_deadline = time.monotonic() + 120
    while gate.connected + gate.connect_failed < total and time.monotonic() < connect_deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    rss_connected = server.rss()
    sessions_connected = server.health().get("active_sessions")
    print(
        f"{gate.connected}/{total} clients connected ({gate.connect_failed} failed to connect); "
        f"server RSS {mb(rss_connected)}; /health active_sessions {sessions_connected}  [load {loadavg()}]"
    )
    per_conn = None
    if rss_idle and rss_connected and gate.connected:
        per_conn = (rss_connected - rss_idle) / gate.connected
        print(f"RSS per extra connection (connected - idle) / {gate.connected}: {per_conn / 1024:.0f} KB")

    results: dict[str, Any] = {
        "rss_idle_bytes": rss_idle,
        "rss_connected_bytes": rss_connected,
        "connected": gate.connected,
        "connect_failed": gate.connect_failed,
        "rss_per_connection_bytes": per_conn,
        "health_sessions_connected": sessions_connected,
    }
    acked: dict[str, str] = dict(warm.acked)
    for phase, seconds in (("search", args.rate_seconds), ("store", args.rate_seconds), ("mixed", args.duration)):
        if seconds <= 0:
            gate.event(phase).set()
            gate.event(phase + "-done").set()
            continue
        tally = Tally(phase)
        gate.tally = tally
        gate.deadline = time.monotonic() + seconds
        sampler.window = f"load-{phase}"
        probe = LagProbe(url) if phase == "mixed" else None
        cpu0 = server.cpu_seconds()
        self0 = _own_cpu()
        tally.started = time.monotonic()
        tally.deadline = gate.deadline
        gate.event(phase).set()
        # wait for every live client to finish the call in flight at the deadline
        while time.monotonic() < gate.deadline + CALL_TIMEOUT + 5:
            await asyncio.sleep(0.25)
            if time.monotonic() >= gate.deadline and gate.finished[phase] >= sum(1 for t in tasks if not t.done()):
                break
        tally.close()
        cpu1 = server.cpu_seconds()
        self1 = _own_cpu()
        lag = probe.finish() if probe else None
        gate.event(phase + "-done").set()
        acked.update(tally.acked)
        load = loadavg()
        who = f"{args.http_clients} HTTP clients" if phase != "mixed" else f"{total} clients"
        print(
            f"\n-- {phase} ({who}, {seconds:.0f} s; the last calls drained after {tally.seconds - seconds:.1f} s)"
            f"  [load average {load}]"
        )
        for op in sorted(tally.lat):
            print(f"  {op:<11} {tally.rate(op):7.1f} req/s   {lat_text(tally.lat[op])}")
        failed = sum(tally.failed.values())
        print(f"  failed requests: {failed}")
        for what, count in tally.errors.most_common(5):
            print(f"    {count} x {what}")
        if tally.timeouts:
            print(f"    timed out ({CALL_TIMEOUT:.0f} s without an answer): {tally.timeouts[:10]}")
        if cpu0 is not None and cpu1 is not None:
            print(
                f"  server CPU: {(cpu1 - cpu0) / tally.seconds:.2f} cores; "
                f"load generator CPU: {(self1 - self0) / tally.seconds:.2f} cores"
            )
        print(f"  server RSS peak: {mb(sampler.peaks.get(sampler.window))}")
        entry: dict[str, Any] = {
            "seconds": round(tally.seconds, 1),
            "loadavg": load,
            "rates": {op: round(tally.rate(op), 2) for op in tally.lat},
            "latency": {op: lat_summary(v) for op, v in tally.lat.items()},
            "failed": failed,
            "failed_by_op": dict(tally.failed),
            "errors": dict(tally.errors.most_common(10)),
            "timeouts": tally.timeouts[:20],
            "acked": len(tally.acked),
            "rss_peak_bytes": sampler.peaks.get(sampler.window),
            "server_cores": None if cpu0 is None or cpu1 is None else round((cpu1 - cpu0) / tally.seconds, 2),
            "client_cores": round((self1 - self0) / tally.seconds, 2),
        }
        if lag is not None:
            entry["lag_probe"] = lat_summary(lag["lag_probe"])
            entry["health"] = lat_summary(lag["health"])
            print(f"  GET /__lag_probe latency: {lat_text(lag['lag_probe'])};  GET /health: {lat_text(lag['health'])}")
        results[phase] = entry
    gate.event("close").set()
    await asyncio.wait(tasks, timeout=60)
    sampler.window = "after-load"
    results["sessions_broken"] = gate.broken
    results["sessions_broken_by_kind"] = dict(gate.broken_by_kind)
    results["session_losses"] = gate.losses[:50]
    print(
        f"client sessions that broke mid-run (each counted once as a failed request, then reconnected): "
        f"{gate.broken} (HTTP {gate.broken_by_kind['http']}, SSE {gate.broken_by_kind['sse']})"
    )
    for line in gate.losses[:20]:
        print(f"    {line}")

    print(f"\nverifying {len(acked)} acknowledged writes with get_memory ...", flush=True)
    missing, unchecked = await verify(url, acked)
    stats = await _stats(url)
    print(
        f"  lost writes: {len(missing)}   could not check: {len(unchecked)}   "
        f"memory_stats.total_memories {stats.get('total_memories')} (acknowledged here: {len(acked)})"
    )
    results.update(
        lost=len(missing), unchecked=len(unchecked), acked=len(acked), total_memories=stats.get("total_memories")
    )
    out["load"] = results
    return acked


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _stats(url: str) -> dict[str, Any]:
    async with http_client(url) as client:
        return await call(client, None, "stats", "memory_stats", {}) or {}


# -- phase: heavy batch store, another client's latency, event-loop lag -------------------------


async def phase_batch(args: argparse.Namespace, server: Server, out: dict[str, Any]) -> dict[str, str]:
    url = server.url
    header(f"batch: one client stores {args.batch} memories ({args.batch_concurrency} in flight) while another reads")
    rng = random.Random(1)

    async def observe(tally: Tally, stop: asyncio.Event, limit_s: float) -> None:
        end = time.monotonic() + limit_s
        for _attempt in range(20):  # a dead session is counted (in tally) and replaced
            try:
                async with http_client(url) as client:
                    while not stop.is_set() and time.monotonic() < end:
                        await call(client, tally, "memory_stats", "memory_stats", {})
                        await search(client, tally, rng)
                    return
            except Exception as exc:
                if session_gone(exc) is None:
                    raise

    # idle baseline: the observer and the probe with nothing else running
    base = Tally("baseline")
    probe = LagProbe(url)
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(args.baseline_seconds, stop.set)
    await observe(base, stop, args.baseline_seconds + 30)
    base.close()
    base_lag = probe.finish()
    idle = statistics.median(base_lag["lag_probe"]) if base_lag["lag_probe"] else 0.0
    print(f"idle baseline ({base.seconds:.0f} s)  [load average {loadavg()}]")
    print(f"  memory_stats  {lat_text(base.lat.get('memory_stats', []))}")
    print(f"  search        {lat_text(base.lat.get('search', []))}")
    print(f"  GET /__lag_probe {lat_text(base_lag['lag_probe'])};  GET /health {lat_text(base_lag['health'])}")

    heavy = Tally("batch")
    seen = Tally("observer")
    texts = Texts("batch")
    stop = asyncio.Event()
    remaining = [args.batch]

    async def writer(client: Client) -> None:
        with contextlib.suppress(SessionGone):  # counted in the tally; the other writers go on
            while remaining[0] > 0:
                remaining[0] -= 1
                await store(client, heavy, texts)

    probe = LagProbe(url)
    observer = asyncio.create_task(observe(seen, stop, 3600))
    await asyncio.sleep(0.5)
    heavy.started = time.monotonic()
    async with http_client(url) as client:
        await asyncio.gather(*(writer(client) for _ in range(args.batch_concurrency)))
    heavy.close()
    stop.set()
    await observer
    seen.close()
    lag = probe.finish()
    load = loadavg()
    lags = [max(0.0, v - idle) for v in lag["lag_probe"]]
    print(
        f"\nduring the batch ({heavy.seconds:.0f} s, {heavy.rate('store'):.1f} stores/s, "
        f"{sum(heavy.failed.values())} failed)  [load average {load}]"
    )
    print(f"  memory_stats  {lat_text(seen.lat.get('memory_stats', []))}")
    print(f"  search        {lat_text(seen.lat.get('search', []))}")
    print(f"  observer failed requests: {sum(seen.failed.values())}")
    print(f"  GET /__lag_probe {lat_text(lag['lag_probe'])};  GET /health {lat_text(lag['health'])}")
    print(f"  event-loop lag (probe latency - idle median {ms(idle)}): {lat_text(lags)}")
    for what, count in (heavy.errors + seen.errors).most_common(5):
        print(f"    {count} x {what}")
    missing, unchecked = await verify(url, heavy.acked)
    print(f"  batch writes acknowledged {len(heavy.acked)}, lost {len(missing)}, could not check {len(unchecked)}")
    out["batch"] = {
        "loadavg": load,
        "batch": args.batch,
        "concurrency": args.batch_concurrency,
        "batch_seconds": round(heavy.seconds, 1),
        "stores_per_s": round(heavy.rate("store"), 2),
        "batch_failed": sum(heavy.failed.values()),
        "observer_failed": sum(seen.failed.values()),
        "baseline": {
            "memory_stats": lat_summary(base.lat.get("memory_stats", [])),
            "search": lat_summary(base.lat.get("search", [])),
            "lag_probe": lat_summary(base_lag["lag_probe"]),
            "health": lat_summary(base_lag["health"]),
        },
        "during": {
            "memory_stats": lat_summary(seen.lat.get("memory_stats", [])),
            "search": lat_summary(seen.lat.get("search", [])),
            "lag_probe": lat_summary(lag["lag_probe"]),
            "health": lat_summary(lag["health"]),
            "lag": lat_summary(lags),
        },
        "lost": len(missing),
        "unchecked": len(unchecked),
    }
    return heavy.acked


# -- phase: connect/disconnect churn --------------------------------------------------------------


async def sse_message_url(url: str) -> tuple[str, str]:
    """Open one raw legacy-SSE stream and read its endpoint event: (the message URL's form, how it went).

    While the stream is open, a malformed POST to the session must answer 400; after it closes,
    404 once the server has released the session.
    """
    async with httpx.AsyncClient(timeout=30) as http:
        async with http.stream("GET", url + "/sse") as response:
            endpoint = ""
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    endpoint = line[5:].strip()
                    break
            target = httpx.URL(url).join(endpoint)
            sid = (
                target.params.get("session_id")
                or target.params.get("sessionId")
                or target.path.rstrip("/").rsplit("/", 1)[-1]
            )
            example = str(target).replace(sid, "{session}")
            open_status = (await http.post(str(target), content=b"{not json", headers=JSON)).status_code
        released_after = None
        started = time.monotonic()
        while time.monotonic() - started < 40:
            if (await http.post(str(target), content=b"{}", headers=JSON)).status_code == 404:
                released_after = time.monotonic() - started
                break
            await asyncio.sleep(0.25)
    note = f"open session answered {open_status}; closed session answered 404 after " + (
        f"{released_after:.2f} s" if released_after is not None else "never (40 s)"
    )
    return example, note


async def phase_cycles(args: argparse.Namespace, server: Server, out: dict[str, Any]) -> None:
    url = server.url
    n_sse = round(args.cycles * args.sse_share)
    header(
        f"cycles: {args.cycles} connect/initialize/close ({args.cycles - n_sse} streamable HTTP, {n_sse} legacy SSE)"
    )
    example, note = await sse_message_url(url)
    print(f"  legacy SSE message URL: {example}  ({note})")
    kinds = ["sse"] * n_sse + ["http"] * (args.cycles - n_sse)
    random.Random(2).shuffle(kinds)
    failed: Counter[str] = Counter()
    done = [0]
    health0 = server.health()
    rss_start = server.rss()
    rss_marks: list[tuple[int, int | None]] = [(0, rss_start)]
    queue = list(enumerate(kinds))
    started = time.monotonic()
    time_limit = args.cycles_time_limit
    session_counts: list[int] = []

    async def watch_sessions() -> None:  # what /health says while the cycles run
        while True:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                count = (await asyncio.to_thread(server.health)).get("active_sessions")
                if isinstance(count, int):
                    session_counts.append(count)
            await asyncio.sleep(2)

    async def worker() -> None:
        while queue and time.monotonic() - started < time_limit:
            _, kind = queue.pop()
            client = http_client(url) if kind == "http" else legacy_sse_client(url)
            try:
                async with asyncio.timeout(CALL_TIMEOUT):
                    async with client:
                        pass
            except Exception as exc:
                failed[f"{kind}: {_err(exc)[:120]}"] += 1
            done[0] += 1
            if done[0] % max(1, args.cycles // 10) == 0:
                rss_marks.append((done[0], server.rss()))
                print(f"  {done[0]:>6} cycles  RSS {mb(rss_marks[-1][1])}  [load {loadavg()}]", flush=True)

    watcher = asyncio.create_task(watch_sessions())
    with EndpointLog() as endpoints:
        await asyncio.gather(*(worker() for _ in range(args.cycle_concurrency)))
    watcher.cancel()
    seconds = time.monotonic() - started
    rss_end = server.rss()
    await asyncio.sleep(args.settle_seconds)
    rss_settled = server.rss()
    health1 = server.health()
    # every SSE session this phase opened must now be unknown to the server
    still_open = 0
    async with httpx.AsyncClient(timeout=30) as http:
        for endpoint in endpoints.urls:
            if (await http.post(endpoint, content=b"{}", headers=JSON)).status_code != 404:
                still_open += 1
    warm_mark = rss_marks[1][1] if len(rss_marks) > 1 else rss_start
    growth = None if not (rss_start and rss_settled) else (rss_settled - rss_start) / rss_start * 100
    growth_warm = None if not (warm_mark and rss_settled) else (rss_settled - warm_mark) / warm_mark * 100
    load = loadavg()
    rate = done[0] / seconds if seconds else 0.0
    print(f"  {done[0]} cycles in {seconds:.0f} s ({rate:.0f}/s), failed {sum(failed.values())}  [load average {load}]")
    for what, count in failed.most_common(5):
        print(f"    {count} x {what}")
    growth_text = "-" if growth is None else f"{growth:+.1f} %"
    print(
        f"  server RSS: start {mb(rss_start)}, end {mb(rss_end)}, "
        f"after {args.settle_seconds:.0f} s settle {mb(rss_settled)} -> growth {growth_text}"
    )
    if growth_warm is not None:
        warm_cycles = rss_marks[1][0] if len(rss_marks) > 1 else 0
        print(f"  growth since the first {warm_cycles} cycles (allocator warm): {growth_warm:+.1f} %")
    sessions = {k: health1.get(k) for k in ("active_sessions", "sessions") if k in health1}
    print(
        f"  SSE sessions opened {len(endpoints.urls)}; message URL answering anything but 404 after close: "
        f"{still_open}; "
        + (
            f"/health {sessions} after {args.settle_seconds:.0f} s (before the cycles "
            f"{ {k: health0.get(k) for k in sessions} }, highest seen during them {max(session_counts, default=None)})"
            if sessions
            else "/health does not report sessions (needs `active_sessions`)"
        )
    )
    out["cycles"] = {
        "loadavg": load,
        "cycles": done[0],
        "sse": n_sse,
        "seconds": round(seconds, 1),
        "failed": sum(failed.values()),
        "errors": dict(failed.most_common(10)),
        "rss_start_bytes": rss_start,
        "rss_end_bytes": rss_end,
        "rss_settled_bytes": rss_settled,
        "rss_growth_pct": None if growth is None else round(growth, 2),
        "rss_growth_after_warm_pct": None if growth_warm is None else round(growth_warm, 2),
        "rss_marks": rss_marks,
        "sse_sessions_opened": len(endpoints.urls),
        "health_sessions_max_during": max(session_counts, default=None),
        "sse_sessions_not_released": still_open,
        "sse_release_probe": note,
        "health_sessions": sessions or None,
    }


# -- phase: kill -9 during concurrent writes ---------------------------------------------------


def _problems(text: str) -> list[str]:
    return [
        line[:200]
        for line in text.splitlines()
        if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")
    ]


async def phase_kill(
    args: argparse.Namespace, server: Server, acked_before: dict[str, str], out: dict[str, Any]
) -> dict[str, str]:
    header(
        f"kill: SIGTERM once, then {args.kill_rounds} rounds of kill -9, "
        f"each during {args.kill_writers} concurrent writers"
    )
    rng = random.Random(3)
    all_acked: dict[str, str] = {}
    rounds: list[dict[str, Any]] = []
    lost_total = 0
    for number in range(args.kill_rounds + 1):
        how = "SIGTERM" if number == 0 else "kill -9"
        tally = Tally(f"round{number}")
        stop = asyncio.Event()

        async def writer(index: int, number: int, tally: Tally, stop: asyncio.Event) -> None:
            texts = Texts(f"kill{number}w{index}")
            kind = "sse" if index < args.kill_sse_writers else "http"
            client = http_client(server.url) if kind == "http" else legacy_sse_client(server.url)
            with contextlib.suppress(Exception):  # the server going away mid-call is the point
                async with client:
                    while not stop.is_set():
                        if await store(client, tally, texts) is None:
                            return

        tasks = [asyncio.create_task(writer(i, number, tally, stop)) for i in range(args.kill_writers)]
        delay = rng.uniform(args.kill_after_min, args.kill_after_max)
        await asyncio.sleep(delay)
        acked_at_signal = len(tally.acked)
        exit_code: int | None = None
        exit_s = 0.0
        shutdown_problems: list[str] = []
        if number == 0:
            signalled = time.monotonic()
            exit_code = await asyncio.to_thread(server.terminate)
            exit_s = time.monotonic() - signalled
            shutdown_problems = _problems(server.boot_log().split(" Shutting down", 1)[-1])
        else:
            server.kill9()
        stop.set()
        await asyncio.wait(tasks, timeout=CALL_TIMEOUT)
        acked_round = dict(tally.acked)  # an answer that arrived is acknowledged, even after the signal
        try:
            ready_s = server.start()
            health = server.health()
            problems = _problems(server.boot_log())
            missing, unchecked = await verify(server.url, acked_round)
            if number == 0 and acked_before:  # everything from the earlier phases survives SIGTERM too
                more_missing, more_unchecked = await verify(server.url, acked_before)
                missing += more_missing
                unchecked += more_unchecked
            found, checked = await searchable(server.url, acked_round, args.search_sample, rng)
            clean = health.get("store") == "ready" and not problems
        except RuntimeError as exc:
            ready_s, health, problems, clean = -1.0, {}, [str(exc)], False
            missing, unchecked, found, checked = list(acked_round), [], 0, 0
        lost_total += len(missing)
        all_acked.update(acked_round)
        row = {
            "round": number,
            "how": how,
            "after_s": round(delay, 2),
            "acked": len(acked_round),
            "acked_at_signal": acked_at_signal,
            "lost": len(missing),
            "unchecked": len(unchecked),
            "ready_s": round(ready_s, 1),
            "store": health.get("store"),
            "clean": clean,
            "log_problems": problems[:3],
            "searchable": f"{found}/{checked}",
            "memories": health.get("memories"),
        }
        line = (
            f"  round {number:>2} ({how} after {delay:.1f} s): {len(acked_round)} acknowledged "
            f"({len(acked_round) - acked_at_signal} of them read after the signal"
            f"{'' if number == 0 else ', sent before it'}), lost {len(missing)}"
        )
        if number == 0:
            row.update(
                exit_code=exit_code,
                exit_s=round(exit_s, 2),
                shutdown_log_problems=shutdown_problems[:3],
                earlier_writes_checked=len(acked_before),
            )
            line += (
                f" (and {len(acked_before)} from earlier phases checked); exit code {exit_code} after {exit_s:.1f} s"
                f", shutdown log {'clean' if not shutdown_problems else shutdown_problems[:2]}"
            )
        line += (
            f"; restart ready in {ready_s:.1f} s, store {health.get('store')!r}, found by search {found}/{checked}, "
            f"boot log {'clean' if not problems else problems[:1]}  [load {loadavg()}]"
        )
        print(line, flush=True)
        if not acked_round:
            for what, count in tally.errors.most_common(3):
                print(f"      {count} x {what}")
        rounds.append(row)
        if ready_s < 0:
            break
    kills = [r for r in rounds if r["round"] > 0]
    clean_rounds = sum(1 for r in kills if r["clean"])
    print(
        f"  kill -9: {len(kills)} rounds, {sum(r['acked'] for r in kills)} writes acknowledged, "
        f"{sum(r['lost'] for r in kills)} lost; store opened cleanly after {clean_rounds}/{len(kills)}"
    )
    out["sigterm"] = rounds[0] if rounds else None
    out["kill"] = {
        "rounds": kills,
        "acked": sum(r["acked"] for r in kills),
        "lost": sum(r["lost"] for r in kills),
        "clean": clean_rounds,
        "loadavg": loadavg(),
    }
    out["kill_lost_including_sigterm"] = lost_total
    return all_acked


def summary(out: dict[str, Any]) -> None:
    """The figures against the targets of issue 6, one line each (markdown table rows)."""
    rows: list[tuple[str, str, str, str]] = []
    load = out.get("load") or {}
    n_http, n_sse = out["args"]["http_clients"], out["args"]["sse_clients"]
    if load:
        mixed = load.get("mixed") or {}
        rows.append(
            (
                f"failed requests, {n_http} HTTP + {n_sse} SSE mixed, {mixed.get('seconds')} s",
                "0",
                str(mixed.get("failed")),
                str(mixed.get("loadavg")),
            )
        )
        by_kind = Counter(
            {kind: sum(n for op, n in (mixed.get("failed_by_op") or {}).items() if op.endswith("/" + kind))
             for kind in ("http", "sse")}
        )
        broken = load.get("sessions_broken_by_kind") or {}
        rows.append(
            (
                "  of which HTTP / SSE; client sessions lost (HTTP / SSE)",
                "0 / 0; 0 / 0",
                f"{by_kind['http']} / {by_kind['sse']}; {broken.get('http', 0)} / {broken.get('sse', 0)}",
                "",
            )
        )
        rows.append(("lost writes after the mixed load", "0", f"{load.get('lost')} of {load.get('acked')}", ""))
        rows.append(
            (
                f"server RSS idle / {n_http + n_sse} connected / peak under load",
                "< 500 MB",
                " / ".join(
                    mb(v)
                    for v in (load.get("rss_idle_bytes"), load.get("rss_connected_bytes"), mixed.get("rss_peak_bytes"))
                ),
                "",
            )
        )
        per = load.get("rss_per_connection_bytes")
        rows.append(("RSS per extra connection", "< 10 MB", "-" if per is None else f"{per / 1024:.0f} KB", ""))
        for phase, op in (("search", "search"), ("store", "store")):
            entry = load.get(phase) or {}
            rate = (entry.get("rates") or {}).get(op)
            lat = (entry.get("latency") or {}).get(op) or {}
            target = ">= 100/s" if op == "search" else "-"
            rows.append(
                (
                    f"{op} req/s at {n_http} HTTP clients ({op} only)",
                    target,
                    f"{rate} (p50 {lat.get('p50_ms')} ms, p95 {lat.get('p95_ms')} ms)",
                    str(entry.get("loadavg")),
                )
            )
        rates = mixed.get("rates") or {}
        total = sum(rates.values())
        rows.append(
            (f"requests/min, mixed {n_http + n_sse} clients", ">= 1000", f"{total * 60:.0f}", str(mixed.get("loadavg")))
        )
    batch = out.get("batch")
    if batch:
        during = batch["during"]
        rows.append(
            (
                f"memory_stats p95 during a {batch['batch']:,}-store batch",
                "< 100 ms (seed 500)",
                f"{during['memory_stats']['p95_ms']} ms (idle {batch['baseline']['memory_stats']['p95_ms']} ms)",
                batch["loadavg"],
            )
        )
        rows.append(
            (
                "search_memory p95 during the batch",
                "< 100 ms (seed 500)",
                f"{during['search']['p95_ms']} ms (idle {batch['baseline']['search']['p95_ms']} ms)",
                batch["loadavg"],
            )
        )
        rows.append(
            (
                "event-loop lag p95 / max during the batch",
                "< 50 ms",
                f"{during['lag']['p95_ms']} / {during['lag']['max_ms']} ms",
                batch["loadavg"],
            )
        )
    cycles = out.get("cycles")
    if cycles:
        rows.append(
            (
                f"RSS growth over {cycles['cycles']} connect/disconnect cycles",
                "< 5 %",
                f"{cycles['rss_growth_pct']} % ({cycles['failed']} failed)",
                cycles["loadavg"],
            )
        )
        rows.append(
            (
                "SSE sessions left after disconnect",
                "0",
                f"{cycles['sse_sessions_not_released']} of {cycles['sse_sessions_opened']} answer on their message URL"
                + (
                    f"; /health active_sessions {cycles['health_sessions'].get('active_sessions')}"
                    f" (highest during the cycles {cycles.get('health_sessions_max_during')})"
                    if cycles.get("health_sessions")
                    else " (/health has no count)"
                ),
                "",
            )
        )
    term = out.get("sigterm")
    if term:
        rows.append(("SIGTERM during writes: exit code, lost", "0, 0", f"{term.get('exit_code')}, {term['lost']}", ""))
    kill = out.get("kill")
    if kill:
        rows.append(
            (
                f"kill -9 during writes ({len(kill['rounds'])} rounds)",
                "0 lost, opens cleanly",
                f"{kill['lost']} lost of {kill['acked']}; clean {kill['clean']}/{len(kill['rounds'])}",
                kill["loadavg"],
            )
        )
    final = out.get("final")
    if final:
        rows.append(
            ("every acknowledged write, checked at the end", "0 lost", f"{final['lost']} lost of {final['acked']}", "")
        )
    print("\n| figure | target | measured | load avg |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


# -- main -----------------------------------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False).stdout.strip()


def checkout(rev: str | None, workdir: Path) -> tuple[Path | None, str]:
    """The package to serve: `rev`'s symbiote/ and personalities/ unpacked in workdir, or the working tree."""
    if not rev:
        dirty = " (with uncommitted changes)" if _git("status", "--porcelain", "symbiote") else ""
        return None, f"working tree at {_git('rev-parse', '--short', 'HEAD')}{dirty}"
    source = workdir / "source"
    source.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "symbiote", "personalities"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    return source, f"git {rev} ({_git('rev-parse', '--short', rev)})"


async def run(args: argparse.Namespace) -> int:
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="symbiote-load-"))
    data = args.data or workdir / "data"
    out: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "args": vars(args) | {"data": str(data)},
        "cpus": os.cpu_count(),
        "loadavg_start": loadavg(),
    }
    source, out["source"] = checkout(args.source_rev, workdir)
    print(f"serving symbiote from {out['source']}")
    server = Server(data, workdir / "server.log", args.log_level, source)
    print(f"data {data}; server log {server.log_path}; {os.cpu_count()} CPUs; load average {loadavg()}")
    ready = server.start()
    print(f"server on {server.url} (pid {server.proc.pid}), ready in {ready:.1f} s")  # type: ignore[union-attr]
    acked: dict[str, str] = {}
    try:
        with RssSampler(server) as sampler:
            if "load" in phases:
                acked.update(await phase_load(args, server, sampler, out))
            if "batch" in phases:
                sampler.window = "batch"
                acked.update(await phase_batch(args, server, out))
            if "cycles" in phases:
                sampler.window = "cycles"
                await phase_cycles(args, server, out)
            if "kill" in phases:
                sampler.window = "kill"  # the sampler follows the server object across restarts
                acked.update(await phase_kill(args, server, dict(acked), out))
        header(f"final check: every memory acknowledged in any phase ({len(acked)})")
        missing, unchecked = await verify(server.url, acked)
        print(f"  lost writes: {len(missing)}   could not check: {len(unchecked)}")
        out["final"] = {"acked": len(acked), "lost": len(missing), "unchecked": len(unchecked)}
        if missing:
            print(f"  first missing ids: {missing[:5]}")
    finally:
        code = server.terminate()
        print(f"server stopped with SIGTERM: exit code {code}")
        out["final_exit_code"] = code
    out["rss_peak_bytes"] = max(sampler.peaks.values(), default=None)
    summary(out)
    lost = out["final"]["lost"] + out.get("load", {}).get("lost", 0) + out.get("batch", {}).get("lost", 0)
    lost += out.get("kill_lost_including_sigterm", 0)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
        print(f"figures written to {args.json}")
    if args.keep:
        print(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if lost else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--phases", default="load,batch,cycles,kill", help="comma-separated: load,batch,cycles,kill")
    parser.add_argument("--duration", type=float, default=600, help="mixed-load seconds (default 600)")
    parser.add_argument(
        "--rate-seconds", type=float, default=60, help="search-only and store-only windows (default 60)"
    )
    parser.add_argument("--http-clients", type=int, default=100)
    parser.add_argument("--sse-clients", type=int, default=20)
    parser.add_argument(
        "--store-share", type=float, default=0.3, help="share of stores in the mixed load (default 0.3)"
    )
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batch-concurrency", type=int, default=4, help="store calls in flight from the batch client")
    parser.add_argument("--baseline-seconds", type=float, default=15)
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument(
        "--sse-share", type=float, default=0.2, help="share of the cycles over legacy SSE (default 0.2)"
    )
    parser.add_argument("--cycle-concurrency", type=int, default=8)
    parser.add_argument("--cycles-time-limit", type=float, default=3600)
    parser.add_argument("--settle-seconds", type=float, default=35, help="wait before the final RSS/session reading")
    parser.add_argument("--kill-rounds", type=int, default=20)
    parser.add_argument("--kill-writers", type=int, default=8)
    parser.add_argument("--kill-sse-writers", type=int, default=2, help="how many of the writers use legacy SSE")
    parser.add_argument("--kill-after-min", type=float, default=1.0)
    parser.add_argument("--kill-after-max", type=float, default=5.0)
    parser.add_argument("--search-sample", type=int, default=10, help="acknowledged memories searched per round")
    parser.add_argument(
        "--source-rev", help="serve the symbiote package of this git revision (e.g. HEAD) instead of the working tree"
    )
    parser.add_argument("--data", type=Path, help="CHROMADB_PATH to use (default: a new temporary directory)")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--client-log", help="write the MCP client's warnings and errors here (default: silenced)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (server log, data)")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--probe-interval", type=float, default=0.02, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe_main(args.probe, args.probe_interval)
        return 0
    if args.client_log:
        handler = logging.FileHandler(args.client_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        mcp_log = logging.getLogger("mcp")
        mcp_log.addHandler(handler)
        mcp_log.setLevel(logging.WARNING)
        mcp_log.propagate = False  # the file only, not stderr
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
