"""The owner's console: an ASGI app the HTTP server mounts at `/console`.

It is built from the running server's memory engine and conversation history and its access
rules (`symbiote.console.gate`): the same Host/Origin checks as `/mcp`, and with auth on a
session opened with the owner secret. Pages are rendered on the server; htmx (vendored in
`static/`) polls an import's progress and keeps the search responsive, with no build step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from symbiote.auth import OriginResolver, OwnerChecks
from symbiote.console import editing, links_review, memories, overview, pasted_page, signin, transfer_pages, trash_pages
from symbiote.console.gate import Access, ConsoleGate
from symbiote.console.jobs import UPLOADS, ImportJobs
from symbiote.console.rendering import STATIC
from symbiote.console.session import SessionKey, Sessions, key_path
from symbiote.console.state import ConsoleState
from symbiote.transfer import ImportReport, import_path, turn_reader

if TYPE_CHECKING:
    from symbiote.auth import AuthStore
    from symbiote.config import Settings
    from symbiote.memory import ConversationHistory, MemoryEngine


class _Wrapped:
    """An ASGI wrapper given as a function, as Starlette's middleware list takes a class."""

    def __init__(self, app: ASGIApp, wrap: Callable[[ASGIApp], ASGIApp]) -> None:
        self.app = wrap(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def console_access(
    settings: Settings,
    mode: str,
    resolver: OriginResolver,
    security: TransportSecuritySettings,
    checks: OwnerChecks | None = None,
    store: AuthStore | None = None,
) -> Access:
    """The console's access rules for a server with these settings and auth mode (`none`/`oauth`).

    With auth on, sessions are signed with the key in the data directory and signing out is
    remembered in the sign-in database `store`; with auth off nobody signs in, and a key for this
    process is enough."""
    signed = mode != "none" and store is not None
    key = SessionKey(key_path(settings.chromadb_path) if signed else None)
    return Access(
        mode=mode,
        resolver=resolver,
        security=security,
        sessions=Sessions(key, store if signed else None),
        checks=checks,
        trust_forwarded=resolver.trust_forwarded,
    )


def create_console(
    engine: MemoryEngine,
    history: ConversationHistory | None,
    access: Access,
    *,
    data_dir: Path,
    max_body_bytes: int = 4 * 1024 * 1024,
    after_gate: Callable[[ASGIApp], ASGIApp] | None = None,
    trash_per_instance: bool = False,
) -> Starlette:
    """`after_gate` wraps the pages behind the gate's checks: the server's full body cap, which the
    host leaves to endpoints that check their caller before reading a body. Import uploads are
    kept in `data_dir` (the private data directory). `trash_per_instance`: the memories are on a
    Chroma server, the trash in this instance's `data_dir` (the trash page says so)."""
    bulk = engine.bulk

    async def run_import(path: Path, dry_run: bool, replace: bool, progress: Callable[[int], None]) -> ImportReport:
        return await import_path(bulk, path, history, dry_run=dry_run, replace=replace, progress=progress)

    routes = [
        Route("/", memories.memories_page, methods=["GET"]),
        Route("/tags", memories.tag_options, methods=["GET"]),
        Route("/memories/{memory_id}", memories.memory_page, methods=["GET"]),
        Route("/memories/{memory_id}", editing.save_memory, methods=["POST"]),
        Route("/new", editing.new_memory_page, methods=["GET"]),
        Route("/new", editing.add_memory, methods=["POST"]),
        Route("/delete", trash_pages.confirm_delete, methods=["GET"]),
        Route("/delete", trash_pages.delete_memories, methods=["POST"]),
        Route("/trash", trash_pages.trash_page, methods=["GET"]),
        Route("/trash/restore", trash_pages.restore_memories, methods=["POST"]),
        Route("/trash/empty", trash_pages.confirm_empty, methods=["GET"]),
        Route("/trash/empty", trash_pages.empty_trash, methods=["POST"]),
        Route("/stats", overview.stats_page, methods=["GET"]),
        Route("/links", links_review.links_page, methods=["GET"]),
        Route("/links/{memory_id}/{action}", links_review.review_link, methods=["POST"]),
        Route("/memories/{memory_id}/link", links_review.link_memory, methods=["POST"]),
        Route("/history", overview.history_page, methods=["GET"]),
        Route("/history/delete", overview.delete_history, methods=["POST"]),
        Route("/transfer", transfer_pages.transfer_page, methods=["GET"]),
        Route("/export", transfer_pages.export_download, methods=["GET"]),
        Route("/import", transfer_pages.import_create, methods=["POST"]),
        Route("/import/text", pasted_page.import_text_page, methods=["POST"]),
        Route("/import/undo", pasted_page.undo_batch, methods=["POST"]),
        Route("/import/{job_id}", transfer_pages.import_status, methods=["GET"]),
        Route("/import/{job_id}/part", transfer_pages.import_part, methods=["POST"]),
        Route("/import/{job_id}/start", transfer_pages.import_start, methods=["POST"]),
        Route("/import/{job_id}/cancel", transfer_pages.import_cancel, methods=["POST"]),
        Route("/signin", signin.signin_page, methods=["GET"]),
        Route("/signin", signin.signin, methods=["POST"]),
        Route("/signout", signin.signout, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(ConsoleGate, access=access)]
    if after_gate is not None:
        middleware.append(Middleware(_Wrapped, wrap=after_gate))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.console = ConsoleState(
        access=access,
        engine=engine,
        history=history,
        turns=turn_reader(history) if history is not None else None,
        jobs=ImportJobs(run_import, data_dir / UPLOADS),
        max_body=max_body_bytes,
        trash_per_instance=trash_per_instance,
    )
    return app
