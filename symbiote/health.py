"""The health route: liveness plus the facts an operator checks first (personality, store, count)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from symbiote import __version__
from symbiote.runtime import Runtime


async def health_report(runtime: Runtime) -> dict[str, Any]:
    status = runtime.engine.status()
    count = await runtime.engine.count()
    report: dict[str, Any] = {
        "status": "degraded" if status["store"] == "unavailable" else "ok",
        "service": "symbiote",
        "version": __version__,
        "personality": runtime.personality.variant,
        "uptime_seconds": runtime.uptime_seconds,
        "memories": count,
        "store": status["store"],
        "model_loaded": status["model_loaded"],
    }
    if "error" in status:
        report["store_error"] = status["error"]
    return report


def health_endpoint(runtime: Runtime):  # type: ignore[no-untyped-def]
    async def health(_request: Request) -> JSONResponse:
        return JSONResponse(await health_report(runtime))

    return health
