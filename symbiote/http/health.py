"""The health route: liveness plus the facts an operator checks first (personality, store, count),
and on a file share who holds the writer lease and how full the share is."""

from __future__ import annotations

import asyncio
from collections.abc import Sized
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from symbiote import __version__
from symbiote.runtime import Runtime
from symbiote.storage.chroma import ChromaServer, server_problem, vector_index_report

# Both open lazily: before the first call (or the warm-up's) they wait, which is healthy, and says so.
IDLE_STORE = "idle (opens on first call)"
IDLE_MODEL = "idle (loads on first call)"


async def health_report(runtime: Runtime, sessions: Sized) -> dict[str, Any]:
    """`sessions`: the legacy SSE session table (`symbiote.http.sse.SessionTable`); streamable HTTP at
    /mcp is stateless and has none."""
    status = runtime.engine.status()
    server = ChromaServer.from_settings(runtime.settings)
    if server is not None and status["store"] == "ready":  # opened while the server was up; is it still?
        down = await asyncio.to_thread(server_problem, server)
        if down is not None:
            status = {**status, "store": "unavailable", "error": down}
    count = await runtime.engine.count() if status["store"] != "unavailable" else None
    report: dict[str, Any] = {
        "status": "degraded" if status["store"] == "unavailable" else "ok",
        "service": "symbiote",
        "version": __version__,
        "personality": runtime.personality.variant,
        "uptime_seconds": runtime.uptime_seconds,
        "transport": runtime.settings.transport,
        "active_sessions": len(sessions),
        "memories": count,
        "store": IDLE_STORE if status["store"] == "not_opened" else status["store"],
        "model": "loaded" if status["model_loaded"] else IDLE_MODEL,
    }
    if "error" in status:
        report["store_error"] = status["error"]
    if status["store"] == "ready":
        aside = await runtime.engine.bulk.set_aside()
        if aside:  # the store serves; the owner should know what an earlier release left unwritten
            report["set_aside"] = {
                "memories": len(aside),
                "why": aside[0][1],
                "what_to_do": "Kept apart, never searched; listed in the console's statistics page and "
                "included in `symbiote export` (text that was not Unicode shown as U+FFFD).",
            }
        losses = await runtime.engine.bulk.losses()
        if losses:  # primary data an open could not recover: never "ok" over a loss
            report["status"] = "degraded"
            report["lost_at_open"] = losses
    if not runtime.settings.chroma_host:  # the embedded store: a vector index set aside (full disk)
        repair = await asyncio.to_thread(vector_index_report, runtime.settings.chromadb_path)
        if repair is not None:
            report["vector_index"] = repair
            if repair.pop("degraded"):
                report["status"] = "degraded"
    problems = runtime.engine.background_problems()
    if problems:  # a background job that keeps failing (retried less and less often): say which, and why
        report["status"] = "degraded"
        report["background_errors"] = problems
    if runtime.share is not None:
        report["writer"] = runtime.share.lease.status()
        report["share"] = await asyncio.to_thread(runtime.share.usage_report)  # a network call on Azure
        if not runtime.share.lease.held:  # a standby serves reads only
            report["status"] = "degraded"
            report["read_only"] = True
    return report


def health_endpoint(runtime: Runtime, sessions: Sized):  # type: ignore[no-untyped-def]
    async def health(_request: Request) -> JSONResponse:
        return JSONResponse(await health_report(runtime, sessions))

    return health
