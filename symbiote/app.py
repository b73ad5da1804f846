"""The HTTP face of Symbiote: streamable HTTP at /mcp, legacy SSE, and health.

`/mcp` is stateless with JSON responses: every POST is self-contained, so any number of
clients (and the Azure Functions adapter, which buffers whole responses) work without
sticky sessions; `GET /mcp` (a server-push stream we never use) is answered 405. The legacy
SSE pair (`/sse`, `/messages/`) stays for older clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from symbiote.config import Settings
from symbiote.health import health_endpoint
from symbiote.runtime import Runtime, build_runtime
from symbiote.security import transport_security

log = logging.getLogger(__name__)


def create_app(settings: Settings, runtime: Runtime | None = None, *, warm_up: bool = True) -> Starlette:
    """The ASGI app. `warm_up` opens the store and loads the model in the background at start."""
    runtime = runtime or build_runtime(settings)
    mcp = runtime.server
    security = transport_security(settings)
    streamable = mcp.streamable_http_app(
        stateless_http=True, json_response=True, transport_security=security, host=settings.host
    )
    sse = mcp.sse_app(transport_security=security, host=settings.host)
    mcp_endpoint = next(r.endpoint for r in streamable.routes if isinstance(r, Route) and r.path == "/mcp")
    health = health_endpoint(runtime)
    routes: list[BaseRoute] = [
        Route("/", health, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/mcp", endpoint=mcp_endpoint, methods=["POST", "DELETE"]),
        *sse.routes,
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            task = asyncio.create_task(runtime.engine.warm_up()) if warm_up else None
            try:
                yield
            finally:
                if task is not None:
                    task.cancel()
        runtime.engine.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.runtime = runtime
    return app
