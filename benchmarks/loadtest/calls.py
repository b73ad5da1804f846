"""One tool call and its bookkeeping (latency, failure, acknowledged write), and the read-back checks."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

from loadtest.transports import CALL_TIMEOUT, SessionGone, SessionWatch, error_text, http_client
from loadtest.workload import QUERIES, Texts


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
            tally.fail(op, error_text(exc))
            if isinstance(exc, TimeoutError):
                tally.timeouts.append(
                    f"{op} sent {time.strftime('%H:%M:%S', time.localtime(time.time() - CALL_TIMEOUT))}"
                )
        if tally is not None and "Connection closed" in str(exc):
            gone = SessionGone(error_text(exc))
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


async def stats(url: str) -> dict[str, Any]:
    async with http_client(url) as client:
        return await call(client, None, "stats", "memory_stats", {}) or {}
