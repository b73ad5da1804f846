"""`symbiote serve` and `symbiote stdio`: the HTTP app under uvicorn, or MCP over stdin/stdout."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from symbiote.cli.environment import settings_from_env
from symbiote.config import ConfigError, Settings

log = logging.getLogger("symbiote")


def _graceful_server_class() -> type:
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """Exits 0 after a clean SIGTERM/SIGINT shutdown.

        uvicorn re-raises the caught signal once it has shut down, so supervisors (and the
        Functions host) would see a kill instead of the graceful exit that really happened.
        """

        on_exit: Callable[[], None] | None = None  # BootApp.stop_waiting: no new app once stopping

        def handle_exit(self, sig: int, frame: object) -> None:
            super().handle_exit(sig, frame)  # type: ignore[arg-type]
            self._captured_signals.clear()
            if self.on_exit is not None:
                self.on_exit()

    return GracefulServer


PRIVATE_UMASK = 0o077  # memories, the sign-in database, caches: files 0600, directories 0700
# Longer than clients keep idle connections (httpx: 5 s). With uvicorn's default of 5 s a
# legacy-SSE client's POST could land on a connection the server was closing that instant,
# and the MCP SDK's SSE client drops the whole session on that error.
KEEP_ALIVE_SECONDS = 30


def serve(args: argparse.Namespace) -> int:
    """`symbiote serve [--transport http|sse|stdio]` (default: SYMBIOTE_TRANSPORT, else http)."""
    import dataclasses

    os.umask(PRIVATE_UMASK)  # before anything (the store process included) creates a file
    settings = settings_from_env()
    overrides = {
        k: v for k, v in (("host", args.host), ("port", args.port), ("transport", args.transport)) if v is not None
    }
    settings = dataclasses.replace(settings, **overrides)
    if settings.transport == "stdio":
        return _serve_stdio(settings)  # no uvicorn, no Starlette, no HTTP at all

    from symbiote.fastboot import handshake

    booting = handshake.usable(settings)
    _prestart(settings)
    import uvicorn

    from symbiote import logs
    from symbiote.http import access_log
    from symbiote.http.connections import ConnectionGuard, connection_cap, guarded_protocol, raise_file_limit

    logs.configure(settings.log_level)
    access_log.install()
    guard = ConnectionGuard(
        connection_cap(settings.max_connections, raise_file_limit()),
        settings.header_timeout_seconds,
        KEEP_ALIVE_SECONDS + settings.header_timeout_seconds,
        body_seconds=settings.body_timeout_seconds,
        head_caps=(settings.max_header_bytes, settings.max_header_line_bytes),
    )
    failures: list[BaseException] = []
    app: Any
    if booting:
        app = _boot_app(settings, failures, lambda: server)
    else:  # with OAuth every request needs the token check: build first, then listen
        try:
            app = _build_app(settings)
        except ConfigError as exc:
            print(f"symbiote: {exc}", file=sys.stderr)
            return 2
    base = f"http://{settings.host}:{settings.port}"
    if settings.transport == "sse":
        log.info("transport: sse - legacy SSE at %s/sse (messages to /messages/{session_id}), health at /health", base)
    else:
        log.info("transport: http - streamable HTTP at %s/mcp, legacy SSE at /sse, health at /health", base)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        log_config=None,
        ws="none",  # nothing here speaks WebSocket; skips importing the websockets package at start
        timeout_graceful_shutdown=10,
        # X-Forwarded-For/-Proto are honoured only when SYMBIOTE_TRUST_FORWARDED_HEADERS says so
        # (symbiote.http.security.ForwardedClient, symbiote.auth.origin); uvicorn's default would
        # trust them from any local process or tunnel.
        proxy_headers=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # Slow or silent connections and oversized heads are closed, and never more are open than the
        # file limit allows.
        http=guarded_protocol(guard),
    )
    server = _graceful_server_class()(config)
    if booting:
        server.on_exit = app.stop_waiting
    server.run()
    if failures:
        return 2 if isinstance(failures[0], ConfigError) else 1
    return 0


def _build_app(settings: Settings) -> Any:
    """The whole HTTP app, with the writer lease and periodic snapshots when SYMBIOTE_SHARE is set."""
    from symbiote.http.app import create_app

    return create_app(settings, periodic_snapshots=True)


def _boot_app(settings: Settings, failures: list[BaseException], server: Callable[[], Any]) -> Any:
    """Listen first and build in the background (`symbiote.fastboot.boot_app`), with the handshake cache."""
    from symbiote.fastboot import handshake
    from symbiote.fastboot.boot_app import BootApp

    print_ = handshake.fingerprint(settings)
    cache = handshake.HandshakeCache.load(settings, print_)
    if cache is not None:  # said, so that an operator (and a test) can tell a replayed start from a recording one
        log.info("handshake cache current: the first requests are answered from it, none is recorded")

    def failed(exc: BaseException) -> None:
        failures.append(exc)
        print(f"symbiote: {exc}", file=sys.stderr)
        server().should_exit = True

    return BootApp(
        lambda: _build_app(settings),
        cache=cache,
        record_as=None if cache is not None else print_,
        save=lambda recorded: recorded.save(settings),
        on_failure=failed,
    )


def stdio(_args: argparse.Namespace) -> int:
    """`symbiote stdio`: the same as `symbiote serve --transport stdio`."""
    import dataclasses

    os.umask(PRIVATE_UMASK)
    return _serve_stdio(dataclasses.replace(settings_from_env(), transport="stdio"))


def _prestart(settings: Settings) -> None:
    """Start the store process before importing the rest: it imports Chroma on the
    other core."""
    if not settings.chroma_host and settings.store_process:
        from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
        from symbiote.errors import StoreUnavailableError
        from symbiote.storage import embedded_store_exists
        from symbiote.storage.chroma import prestart

        # With a file share the store may be opened only under the writer lease: not before. One
        # that does not exist yet is made ahead elsewhere, for the engine's warm-up to copy in.
        try:
            exists = embedded_store_exists(settings.chromadb_path)
        except StoreUnavailableError:
            exists = None  # cannot be created: the engine's warm-up reports it
        opens = not settings.share and bool(exists)
        ahead = (MODEL_NAME, MODEL_DIMENSION) if not settings.share and exists is False else None
        prestart(settings.chromadb_path, ("memories", MODEL_NAME, MODEL_DIMENSION) if opens else None, ahead)


def _serve_stdio(settings: Settings) -> int:
    """Claim stdin/stdout and answer the handshake from the cache first (`symbiote.fastboot.stdio_relay`),
    then build the server and hand it the rest of the session."""
    from symbiote.fastboot import handshake, stdio_handshake
    from symbiote.fastboot.stdio_relay import StdioRelay

    print_ = handshake.fingerprint(settings)
    cache = stdio_handshake.StdioHandshakeCache.load(settings, print_)
    relay = StdioRelay(cache, on_mismatch=lambda: cache.forget(settings) if cache is not None else None)
    relay.start()
    _end_on_interrupt(relay)
    _prestart(settings)
    import anyio
    from mcp.server.stdio import stdio_server

    from symbiote import logs
    from symbiote.runtime import build_runtime

    logs.configure(settings.log_level)
    runtime = build_runtime(settings)
    log.info("transport: stdio - serving MCP over stdin/stdout")

    async def record_cache() -> None:
        from symbiote.fastboot.boot_app import RECORD_DELAY_SECONDS

        await anyio.sleep(RECORD_DELAY_SECONDS)  # after the first requests and the warm-up
        try:
            recorded = await stdio_handshake.record(runtime.server, print_)
        except Exception:  # a cache we could not record only costs the next start time
            log.warning("stdio handshake cache not recorded", exc_info=True)
            return
        if recorded.save(settings) is not None:
            log.info("recorded %d stdio handshake answers for the next start", len(recorded.replies))

    async def main() -> None:
        stdin, stdout = relay.sdk_files()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(runtime.engine.warm_up)
            if cache is None:
                tasks.start_soon(record_cache)
            async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
                await runtime.server.run_stdio_streams(read_stream, write_stream)
            tasks.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        relay.finish()
        runtime.close()
    return 1 if relay.client_gone else 0  # as the SDK alone exits when its stdout is closed


def _end_on_interrupt(relay: Any) -> None:
    """Ctrl+C ends a stdio session the way a client does, by ending its input: the SDK then
    finishes cleanly. (Left to asyncio, the interrupt waited for a thread blocked reading stdin
    until the client went away.) A second Ctrl+C interrupts at once."""
    import signal

    def interrupted(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if not relay.end_input():
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
