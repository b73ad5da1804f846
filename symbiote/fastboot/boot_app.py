"""Listen at once, build the app in a worker thread, and answer the handshake meanwhile.

`symbiote serve` spends most of its start importing the MCP SDK. `BootApp` lets uvicorn bind
straight away: it reports its lifespan started, builds the real app (`symbiote.http.app.create_app`) in a
thread, then runs that app's own lifespan. Until it is ready, a request the handshake cache
(`symbiote.fastboot.handshake`) recognises is answered from it; every other request waits for the app
and then goes to it unchanged, its body replayed. Once the app is ready and the cache is
missing or stale, the app is asked the handshake questions and the cache is written for the
next start. If building fails (a configuration error), the server exits with its message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable

from starlette.types import Message, Receive, Scope, Send

from symbiote.fastboot.handshake import ASGIApp, HandshakeCache
from symbiote.fastboot.recording import record

log = logging.getLogger(__name__)

RECORD_DELAY_SECONDS = 3.0  # after the first requests and the model's warm-up, not during them


class BootApp:
    """An ASGI app that is ready to listen before the real one has been built."""

    def __init__(
        self,
        build: Callable[[], ASGIApp],
        *,
        cache: HandshakeCache | None = None,
        record_as: str | None = None,
        save: Callable[[HandshakeCache], object] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
        record_delay: float = RECORD_DELAY_SECONDS,
    ) -> None:
        """`cache` answers the handshake while building; `record_as` (a fingerprint) asks for a
        new cache to be recorded and handed to `save` once the app is up."""
        self._build = build
        self._cache = cache
        self._record_as = record_as
        self._save = save
        self._on_failure = on_failure
        self._record_delay = record_delay
        self._app: ASGIApp | None = None
        self._failure: BaseException | None = None
        self._stopping = False
        self._ready: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._inner_lifespan: asyncio.Task[None] | None = None
        self._to_inner: asyncio.Queue[Message] | None = None
        self._from_inner: asyncio.Queue[Message] | None = None

    @property
    def app(self) -> ASGIApp | None:
        """The real app, once built and started."""
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if self._app is None:
            if self._cache is not None and self._cache.wants_body(scope):
                body, receive = await _buffer(receive)
                answer = self._cache.answer(scope, body) if body is not None else None
                if answer is not None:
                    status, headers, data = answer
                    await send({"type": "http.response.start", "status": status, "headers": headers})
                    await send({"type": "http.response.body", "body": data})
                    return
            assert self._ready is not None, "requests arrive only after the lifespan has started"
            await self._ready.wait()
            if self._app is None:
                await _unavailable(scope, send, "shutting down" if self._stopping else "failed to start; see its log")
                return
        await self._app(scope, receive, send)

    def stop_waiting(self) -> None:
        """The server is shutting down: requests still waiting for the app get 503 now, and an app
        that finishes building is not started. Safe from a signal handler."""
        self._stopping = True
        if self._app is None and self._ready is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits any more
                self._loop.call_soon_threadsafe(self._ready.set)

    async def _lifespan(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        await receive()  # lifespan.startup
        loop = self._loop = asyncio.get_running_loop()
        self._ready = asyncio.Event()
        built: asyncio.Future[ASGIApp] = loop.create_future()
        threading.Thread(target=self._build_in_thread, args=(loop, built), name="symbiote-build", daemon=True).start()
        starting = asyncio.ensure_future(self._start(scope, built))
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        if not built.done():
            starting.cancel()  # still building: nothing has started, nothing to stop
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        for task in list(self._tasks):
            task.cancel()
        await self._stop()
        await send({"type": "lifespan.shutdown.complete"})

    def _build_in_thread(self, loop: asyncio.AbstractEventLoop, built: asyncio.Future[ASGIApp]) -> None:
        def settle(app: ASGIApp | None, exc: BaseException | None) -> None:
            if built.done():
                return
            if exc is not None:
                built.set_exception(exc)
            else:
                built.set_result(app)  # type: ignore[arg-type]

        try:
            app = self._build()
        except BaseException as exc:  # noqa: BLE001 - reported to the loop, which decides
            with contextlib.suppress(RuntimeError):  # the loop is gone: the server is stopping anyway
                loop.call_soon_threadsafe(settle, None, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, app, None)

    async def _start(self, scope: Scope, built: asyncio.Future[ASGIApp]) -> None:
        """Wait for the build, then run the real app's lifespan startup."""
        assert self._ready is not None
        try:
            app = await built
            if self._stopping:
                return
            self._to_inner, self._from_inner = asyncio.Queue(), asyncio.Queue()
            inner_scope = {**scope, "state": scope.get("state", {})}
            self._inner_lifespan = asyncio.create_task(_run(app, inner_scope, self._to_inner.get, self._from_inner.put))
            await self._to_inner.put({"type": "lifespan.startup"})
            reply = await self._from_inner.get()
            if reply["type"] != "lifespan.startup.complete":
                with contextlib.suppress(Exception):  # its traceback is in the message already
                    await self._inner_lifespan
                raise RuntimeError(reply.get("message") or "the app's start-up failed")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a failed start ends the server, with the reason
            self._failure = exc
            self._ready.set()
            if self._on_failure is not None:
                self._on_failure(exc)
            return
        self._app = app
        self._ready.set()
        if self._record_as is not None and self._save is not None:
            self._spawn(self._record(app, self._record_as, self._save))

    async def _record(self, app: ASGIApp, print_: str, save: Callable[[HandshakeCache], object]) -> None:
        await asyncio.sleep(self._record_delay)
        try:
            cache = await record(app, print_)
            if await asyncio.to_thread(save, cache) is None:
                log.info(
                    "handshake cache not written: neither the data directory nor the user's cache directory is writable"
                )
                return
            log.info("handshake cache recorded (%d answers) for the next start", len(cache.replies))
        except Exception:  # a cache we could not record only costs the next start time
            log.warning("handshake cache not recorded", exc_info=True)

    async def _stop(self) -> None:
        """Run the real app's lifespan shutdown, if it started."""
        if self._inner_lifespan is None or self._to_inner is None or self._from_inner is None:
            return
        if self._inner_lifespan.done():
            return
        await self._to_inner.put({"type": "lifespan.shutdown"})
        await self._from_inner.get()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._inner_lifespan, timeout=5)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _buffer(receive: Callable[[], Awaitable[Message]]) -> tuple[bytes | None, Callable[[], Awaitable[Message]]]:
    """Read the whole request body, and a `receive` that gives it again to whoever comes next."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            replayed: list[Message] = [message]
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            replayed = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
            break

    async def replay() -> Message:
        if replayed:
            return replayed.pop(0)
        return await receive()

    body = b"".join(chunks) if replayed[0]["type"] == "http.request" else None
    return body, replay


async def _run(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """`app` as a coroutine, for `create_task` (an ASGI app's call need only be awaitable)."""
    await app(scope, receive, send)


async def _unavailable(scope: Scope, send: Send, why: str) -> None:
    if scope["type"] != "http":
        return
    data = json.dumps({"error": f"Symbiote {why}"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": data})
