"""What setup runs before the first start: the model exported, the handshake caches recorded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from symbiote.cli.environment import settings_from_env
from symbiote.config import ConfigError, Settings


def export(args: argparse.Namespace) -> int:
    from symbiote import logs
    from symbiote.embedding.onnx_export import export_model

    settings = settings_from_env()
    logs.configure(settings.log_level)
    target = Path(args.target) if args.target else settings.model_dir
    export_model(target)
    from symbiote.runtime import load_embedder

    load_embedder(target)  # keeps the warm vectors beside the model, for the first start
    from symbiote.retrieval import make_word_table

    make_word_table(target)  # and the word table scoring reads (`retrieval.informative.WordTable`)
    print(f"exported all-MiniLM-L6-v2 to {target}")
    return 0


def record_handshake(_args: argparse.Namespace) -> int:
    """Record the handshake caches now, HTTP and stdio (setup does, so that even the first start
    answers at once)."""
    settings = settings_from_env()
    from symbiote import logs

    logs.configure("WARNING")
    for recorder in (_record_http_handshake, _record_stdio_handshake):
        status = recorder(settings)
        if status:
            return status
    return 0


def _record_http_handshake(settings: Settings) -> int:
    import asyncio

    from symbiote.fastboot import handshake, recording

    if not handshake.usable(settings):
        print("the HTTP handshake cache is not used with these settings (OAuth, a public interface, or not HTTP)")
        return 0
    print_ = handshake.fingerprint(settings)
    if handshake.HandshakeCache.load(settings, print_) is not None:
        print("the HTTP handshake cache is up to date")
        return 0
    from symbiote.http.app import create_app

    try:
        app = create_app(settings, warm_up=False)
    except ConfigError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 2

    async def ask() -> handshake.HandshakeCache:
        async with app.router.lifespan_context(app):
            return await recording.record(app, print_)

    cache = asyncio.run(ask())
    return _report_saved("HTTP", len(cache.replies), cache.save(settings), handshake.cache_path(settings))


def _record_stdio_handshake(settings: Settings) -> int:
    import dataclasses

    import anyio

    from symbiote.fastboot import handshake, stdio_handshake

    settings = stdio_handshake.stdio_settings(settings)
    print_ = handshake.fingerprint(settings)
    if stdio_handshake.StdioHandshakeCache.load(settings, print_) is not None:
        print("the stdio handshake cache is up to date")
        return 0
    from symbiote.runtime import build_runtime

    try:
        # The answers do not depend on the store: record them without taking the file share's writer lease.
        runtime = build_runtime(dataclasses.replace(settings, share=""))
    except ConfigError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 2
    try:
        cache = anyio.run(stdio_handshake.record, runtime.server, print_)
    finally:
        runtime.close()
    return _report_saved("stdio", len(cache.replies), cache.save(settings), stdio_handshake.cache_path(settings))


def _report_saved(kind: str, answers: int, where: Path | None, wanted: Path) -> int:
    """record-handshake's last word on one cache: where it went, or that it went nowhere (1)."""
    if where is None:
        print(f"symbiote: could not write {wanted} (nor the user's cache directory)", file=sys.stderr)
        return 1
    print(f"recorded {answers} {kind} handshake answers in {where}")
    return 0
