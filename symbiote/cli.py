"""`symbiote`: serve over HTTP, serve over stdio, or export the embedding model."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path

from symbiote import __version__
from symbiote.config import ConfigError, Settings

log = logging.getLogger("symbiote")


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

        def handle_exit(self, sig: int, frame: object) -> None:
            super().handle_exit(sig, frame)  # type: ignore[arg-type]
            self._captured_signals.clear()

    return GracefulServer


def _preload_memory_stack() -> None:
    """Import Chroma and onnxruntime on a side thread while the main thread imports the MCP SDK.

    Part of each import (reading files, loading shared libraries) runs without the GIL, so the
    first search after a cold start (a scale-from-zero wake) comes back sooner.
    """

    def work() -> None:
        try:
            import chromadb  # noqa: F401
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except Exception:  # the real import later reports any problem properly
            pass

    if os.environ.get("SYMBIOTE_PRELOAD", "1") != "0":
        threading.Thread(target=work, name="preload", daemon=True).start()


def serve(args: argparse.Namespace) -> int:
    import dataclasses

    _preload_memory_stack()

    import uvicorn

    from symbiote import logs
    from symbiote.app import create_app

    settings = _settings()
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = dataclasses.replace(settings, **overrides)
    logs.configure(settings.log_level)
    app = create_app(settings)
    log.info("serving MCP on http://%s:%d/mcp (legacy SSE at /sse, health at /health)", settings.host, settings.port)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        log_config=None,
        timeout_graceful_shutdown=10,
    )
    _graceful_server_class()(config).run()
    return 0


def stdio(_args: argparse.Namespace) -> int:
    import anyio

    from symbiote import logs
    from symbiote.runtime import build_runtime

    settings = _settings()
    logs.configure(settings.log_level)
    runtime = build_runtime(settings)
    log.info("serving MCP over stdio")

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(runtime.engine.warm_up)
            await runtime.server.run_stdio_async()
            tasks.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        runtime.engine.close()
    return 0


def export(args: argparse.Namespace) -> int:
    from symbiote import logs
    from symbiote.model_export import export_model

    settings = _settings()
    logs.configure(settings.log_level)
    target = Path(args.target) if args.target else settings.model_dir
    export_model(target)
    print(f"exported all-MiniLM-L6-v2 to {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="symbiote", description="Venom's persistent memory, over MCP.")
    parser.add_argument("--version", action="version", version=f"symbiote {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve streamable HTTP (/mcp), legacy SSE and /health")
    serve_cmd.add_argument("--host", help="interface to bind (default: HOST or 127.0.0.1)")
    serve_cmd.add_argument("--port", type=int, help="port (default: PORT or 8000)")
    serve_cmd.set_defaults(run=serve)
    commands.add_parser("stdio", help="serve over stdin/stdout (Claude Desktop)").set_defaults(run=stdio)
    export_cmd = commands.add_parser("export-model", help="export the bundled model to ONNX (needs torch)")
    export_cmd.add_argument("--target", help="directory to write (default: SYMBIOTE_MODEL_DIR)")
    export_cmd.set_defaults(run=export)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
