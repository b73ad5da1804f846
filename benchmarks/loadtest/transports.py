"""How the load clients connect: streamable HTTP, and legacy SSE watched for the message POST that
failed (the SDK's `sse_client` then loses the session without telling the call in flight).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Self

import httpx2
from mcp import Client
from mcp.client.sse import sse_client

CALL_TIMEOUT = 120.0
SSE_TIMEOUT = 5.0  # sse_client's connect/write/pool timeout for the message POSTs (the SDK's default)


def error_text(exc: BaseException) -> str:
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


def http_client(url: str) -> Client:
    return Client(url + "/mcp", read_timeout_seconds=CALL_TIMEOUT)


class SessionWatch:
    """Notices, for one legacy-SSE client, the message POST that failed (see `calls._call_tool`)."""

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
                self._watch.failed(f"message POST failed: {error_text(exc)}")
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
    client._load_watch = watch  # type: ignore[attr-defined]  # read by calls._call_tool
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
