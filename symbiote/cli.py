"""`symbiote`: serve over HTTP, serve over stdio, or export the embedding model."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Callable

from symbiote import __version__
from symbiote.config import ConfigError, Settings

log = logging.getLogger("symbiote")
RECORD_DELAY_SECONDS = 3.0  # stdio records its handshake cache this long after start


def _settings() -> Settings:
    try:
        return Settings.from_env()
    except ConfigError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


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


def serve(args: argparse.Namespace) -> int:
    """`symbiote serve [--transport http|sse|stdio]` (default: SYMBIOTE_TRANSPORT, else http)."""
    import dataclasses

    settings = _settings()
    overrides = {
        k: v for k, v in (("host", args.host), ("port", args.port), ("transport", getattr(args, "transport", None))) if v is not None
    }
    settings = dataclasses.replace(settings, **overrides)
    if settings.transport == "stdio":
        return _serve_stdio(settings)  # no uvicorn, no Starlette, no HTTP at all

    from symbiote.fastboot import handshake

    booting = handshake.usable(settings)
    _prestart(settings)
    import uvicorn

    from symbiote import logs

    logs.configure(settings.log_level)
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
        # Longer than clients keep idle connections (httpx: 5 s). With uvicorn's default of 5 s a
        # legacy-SSE client's POST could land on a connection the server was closing that instant,
        # and the MCP SDK's SSE client drops the whole session on that error.
        timeout_keep_alive=30,
    )
    server = _graceful_server_class()(config)
    if booting:
        server.on_exit = app.stop_waiting
    server.run()
    if failures:
        return 2 if isinstance(failures[0], ConfigError) else 1
    return 0


def _build_app(settings: Settings) -> Any:
    """The whole HTTP app: create_app, plus the writer lease and snapshots when SYMBIOTE_SHARE is set."""
    from symbiote.azure.snapshots import create_share_app
    from symbiote.fastboot.collector import collector_paused

    with collector_paused():
        return create_share_app(settings, periodic_snapshots=True)


def _boot_app(settings: Settings, failures: list[BaseException], server: Callable[[], Any]) -> Any:
    """Listen first and build in the background (`symbiote.fastboot.boot_app`), with the handshake cache."""
    from symbiote.fastboot import handshake
    from symbiote.fastboot.boot_app import BootApp

    print_ = handshake.fingerprint(settings)
    cache = handshake.HandshakeCache.load(settings, print_)

    def failed(exc: BaseException) -> None:
        failures.append(exc)
        print(f"symbiote: {exc}", file=sys.stderr)
        server().should_exit = True

    def build() -> Any:
        from symbiote.fastboot import preload

        preload.start_for(settings)  # now, not before: its imports would slow the way to listening
        return _build_app(settings)

    return BootApp(
        build,
        cache=cache,
        record_as=None if cache is not None else print_,
        save=lambda recorded: recorded.save(settings),
        on_failure=failed,
    )


def stdio(_args: argparse.Namespace) -> int:
    """`symbiote stdio`: the same as `symbiote serve --transport stdio`."""
    import dataclasses

    return _serve_stdio(dataclasses.replace(_settings(), transport="stdio"))


def _prestart(settings: Settings) -> None:
    """Start the embedded store's process before importing the rest: it imports Chroma on the
    other core. (The model is preloaded only while the handshake cache answers for the build:
    where a client waits for the build itself, loading the model beside it would delay it.)"""
    if not settings.chroma_host and settings.store_process:
        from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
        from symbiote.errors import StoreUnavailableError
        from symbiote.storage.opening import embedded_store_exists
        from symbiote.storage.process import prestart

        # With a file share the store may be opened only under the writer lease: not before. A
        # store that does not exist yet is created on the first memory operation, not now.
        try:
            opens = not settings.share and embedded_store_exists(settings.chromadb_path)
        except StoreUnavailableError:
            opens = False  # the engine's warm-up reports it
        prestart(settings.chromadb_path, ("memories", MODEL_NAME, MODEL_DIMENSION) if opens else None)


def _serve_stdio(settings: Settings) -> int:
    """Claim stdin/stdout and answer the handshake from the cache first (`symbiote.fastboot.stdio_relay`),
    then build the server and hand it the rest of the session."""
    from symbiote.fastboot import handshake
    from symbiote.fastboot import stdio_handshake
    from symbiote.fastboot.stdio_relay import StdioRelay

    print_ = handshake.fingerprint(settings)
    cache = stdio_handshake.StdioHandshakeCache.load(settings, print_)
    relay = StdioRelay(cache, on_mismatch=lambda: cache.forget(settings) if cache is not None else None)
    relay.start()
    _end_on_interrupt(relay)
    from symbiote.fastboot.collector import collector_paused

    with collector_paused():
        _prestart(settings)
        if cache is not None:  # the client is answered meanwhile: load the model beside the build
            from symbiote.fastboot import preload

            preload.start_for(settings)
        import anyio
        from mcp.server.stdio import stdio_server

        from symbiote import logs
        from symbiote.runtime import build_runtime

        logs.configure(settings.log_level)
        runtime = build_runtime(settings)
    log.info("transport: stdio - serving MCP over stdin/stdout")

    async def record_cache() -> None:
        await anyio.sleep(RECORD_DELAY_SECONDS)  # after the first requests and the warm-up
        try:
            recorded = await stdio_handshake.record(runtime.server, print_)
        except Exception:  # noqa: BLE001 - a cache we could not record only costs the next start time
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
        runtime.engine.close()
    return 0


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


def export(args: argparse.Namespace) -> int:
    from symbiote import logs
    from symbiote.embedding.export import export_model

    settings = _settings()
    logs.configure(settings.log_level)
    target = Path(args.target) if args.target else settings.model_dir
    export_model(target)
    from symbiote.embedding.model import load_warm
    from symbiote.retrieval.topics import TopicIndex

    load_warm(target, TopicIndex.questions())  # stores the topic questions' vectors beside it
    print(f"exported all-MiniLM-L6-v2 to {target}")
    return 0


def _auth_store(settings: Settings):  # type: ignore[no-untyped-def]
    from symbiote.auth.store import AuthStore, default_auth_db

    return AuthStore(settings.auth_db_path or default_auth_db(settings.chromadb_path))


def _when(stamp: float | None) -> str:
    import datetime

    if stamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def keys(args: argparse.Namespace) -> int:
    """`symbiote keys create|list|revoke`: static API keys for clients that can send a header."""
    from symbiote.auth.policy import resolve_mode
    from symbiote.auth.store import AuthStoreUnavailable

    settings = _settings()
    store = _auth_store(settings)
    try:
        if args.action == "create":
            name = " ".join(args.name.split())
            if not name or len(name) > 100:
                print("symbiote: give the key a name of 1 to 100 characters, e.g. `symbiote keys create vscode`", file=sys.stderr)
                return 2
            key, secret = store.create_api_key(name)
            print(f"Created API key {key.key_id} ({key.name}). Copy it now: it is not shown again.\n")
            print(f"    {secret}\n")
            print(f"Send it as an HTTP header:  Authorization: Bearer {secret}")
            if resolve_mode(settings) == "none":
                print(
                    "\nNote: with this configuration the server runs without authentication (SYMBIOTE_AUTH=none on "
                    "loopback); keys are checked when it runs with SYMBIOTE_AUTH=oauth."
                )
            return 0
        if args.action == "list":
            found = store.list_api_keys()
            if not found:
                print("No API keys. Create one with `symbiote keys create NAME`.")
                return 0
            print(f"{'ID':<14} {'NAME':<24} {'KEY':<16} {'CREATED':<22} {'LAST USED':<22} STATUS")
            for key in found:
                status = f"revoked {_when(key.revoked_at)}" if key.revoked_at else "active"
                print(f"{key.key_id:<14} {key.name[:24]:<24} {key.hint:<16} {_when(key.created_at):<22} {_when(key.last_used_at):<22} {status}")
            return 0
        revoked = store.revoke_api_key(args.key)
        if not revoked:
            print(f"symbiote: no active API key with id or name {args.key!r} (see `symbiote keys list`)", file=sys.stderr)
            return 1
        for key in revoked:
            print(f"Revoked API key {key.key_id} ({key.name}); it stops working immediately.")
        return 0
    except AuthStoreUnavailable as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()


def oauth(args: argparse.Namespace) -> int:
    """`symbiote oauth revoke-all`: disconnect every OAuth connector (API keys are untouched)."""
    from symbiote.auth.store import AuthStoreUnavailable

    store = _auth_store(_settings())
    try:
        count = store.revoke_all_grants()
    except AuthStoreUnavailable as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(f"Revoked {count} OAuth connection(s); each connector must sign in again with the owner secret.")
    return 0


def owner_secret_hash(_args: argparse.Namespace) -> int:
    """Read an owner secret (prompt or stdin) and print its SYMBIOTE_OWNER_SECRET_HASH value."""
    import getpass

    from symbiote.auth.owner import hash_secret
    from symbiote.auth.policy import GENERATE_HINT, MIN_OWNER_SECRET_LENGTH

    secret = getpass.getpass("Owner secret: ") if sys.stdin.isatty() else sys.stdin.readline()
    secret = secret.strip()
    if len(secret) < MIN_OWNER_SECRET_LENGTH:
        print(f"symbiote: the owner secret needs at least {MIN_OWNER_SECRET_LENGTH} characters; {GENERATE_HINT}", file=sys.stderr)
        return 2
    print(hash_secret(secret))
    return 0


def record_handshake(_args: argparse.Namespace) -> int:
    """Record the handshake caches now, HTTP and stdio (setup does, so that even the first start
    answers at once)."""
    settings = _settings()
    from symbiote import logs

    logs.configure("WARNING")
    for recorder in (_record_http_handshake, _record_stdio_handshake):
        status = recorder(settings)
        if status:
            return status
    return 0


def _record_http_handshake(settings: Settings) -> int:
    import asyncio

    from symbiote.fastboot import handshake

    if not handshake.usable(settings):
        print("the HTTP handshake cache is not used with these settings (OAuth, a public interface, or not HTTP)")
        return 0
    print_ = handshake.fingerprint(settings)
    if handshake.HandshakeCache.load(settings, print_) is not None:
        print("the HTTP handshake cache is up to date")
        return 0
    from symbiote.azure.snapshots import create_share_app

    try:
        app = create_share_app(settings, warm_up=False)
    except ConfigError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 2

    async def ask() -> handshake.HandshakeCache:
        async with app.router.lifespan_context(app):
            return await handshake.record(app, print_)

    cache = asyncio.run(ask())
    return _report_saved("HTTP", len(cache.replies), cache.save(settings), handshake.cache_path(settings))


def _record_stdio_handshake(settings: Settings) -> int:
    import anyio

    from symbiote.fastboot import handshake

    from symbiote.fastboot import stdio_handshake

    settings = stdio_handshake.stdio_settings(settings)
    print_ = handshake.fingerprint(settings)
    if stdio_handshake.StdioHandshakeCache.load(settings, print_) is not None:
        print("the stdio handshake cache is up to date")
        return 0
    from symbiote.runtime import build_runtime

    try:
        runtime = build_runtime(settings)
    except ConfigError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 2
    try:
        cache = anyio.run(stdio_handshake.record, runtime.server, print_)
    finally:
        runtime.engine.close()
    return _report_saved("stdio", len(cache.replies), cache.save(settings), stdio_handshake.cache_path(settings))


def _report_saved(kind: str, answers: int, where: Path | None, wanted: Path) -> int:
    """record-handshake's last word on one cache: where it went, or that it went nowhere (1)."""
    if where is None:
        print(f"symbiote: could not write {wanted} (nor the user's cache directory)", file=sys.stderr)
        return 1
    print(f"recorded {answers} {kind} handshake answers in {where}")
    return 0


def reset(args: argparse.Namespace) -> int:
    """Start an empty memory store; the old data directory is moved aside, never deleted."""
    from symbiote.storage.opening import reset_store

    settings = _settings()
    if not args.confirm:
        print(
            f"symbiote: this moves {settings.chromadb_path} aside and starts an empty memory store. "
            "Run again with --confirm to do it (nothing is deleted; the old directory is kept).",
            file=sys.stderr,
        )
        return 2
    moved = reset_store(settings.chromadb_path)
    if moved is None:
        print(f"created an empty memory store at {settings.chromadb_path}")
    else:
        print(f"moved the old store to {moved}; {settings.chromadb_path} is now empty. Restart the server.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="symbiote", description="Venom's persistent memory, over MCP.")
    parser.add_argument("--version", action="version", version=f"symbiote {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve streamable HTTP (/mcp), legacy SSE and /health")
    serve_cmd.add_argument("--host", help="interface to bind (default: HOST or 127.0.0.1)")
    serve_cmd.add_argument("--port", type=int, help="port (default: PORT or 8000)")
    serve_cmd.add_argument(
        "--transport",
        choices=("http", "sse", "stdio"),
        help="http: streamable HTTP at /mcp plus legacy SSE (default); sse: legacy SSE only; stdio: stdin/stdout "
        "(default: SYMBIOTE_TRANSPORT or http)",
    )
    serve_cmd.set_defaults(run=serve)
    commands.add_parser(
        "record-handshake", help="record the answers to initialize, tools/list... for the next start (setup runs it)"
    ).set_defaults(run=record_handshake)
    commands.add_parser("stdio", help="serve over stdin/stdout (Claude Desktop); = serve --transport stdio").set_defaults(run=stdio)
    export_cmd = commands.add_parser("export-model", help="export the bundled model to ONNX (needs torch)")
    export_cmd.add_argument("--target", help="directory to write (default: SYMBIOTE_MODEL_DIR)")
    export_cmd.set_defaults(run=export)
    keys_cmd = commands.add_parser("keys", help="API keys for clients that send 'Authorization: Bearer' (oauth mode)")
    key_actions = keys_cmd.add_subparsers(dest="action", required=True)
    create_cmd = key_actions.add_parser("create", help="create a key and print it once")
    create_cmd.add_argument("name", help="what the key is for, e.g. vscode")
    key_actions.add_parser("list", help="list keys (never the keys themselves)")
    revoke_cmd = key_actions.add_parser("revoke", help="revoke a key by id or name")
    revoke_cmd.add_argument("key", help="the key's id (key_...) or name")
    keys_cmd.set_defaults(run=keys)
    oauth_cmd = commands.add_parser("oauth", help="manage OAuth connections (Claude, ChatGPT connectors)")
    oauth_actions = oauth_cmd.add_subparsers(dest="action", required=True)
    oauth_actions.add_parser("revoke-all", help="disconnect every OAuth connector; they must sign in again")
    oauth_cmd.set_defaults(run=oauth)
    reset_cmd = commands.add_parser("reset", help="start an empty memory store (the old one is kept aside)")
    reset_cmd.add_argument("--confirm", action="store_true", help="really do it")
    reset_cmd.set_defaults(run=reset)
    commands.add_parser(
        "owner-secret-hash", help="print SYMBIOTE_OWNER_SECRET_HASH for an owner secret read from stdin"
    ).set_defaults(run=owner_secret_hash)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
