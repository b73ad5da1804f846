"""What `/health` and the console's statistics say of a store an earlier release left broken (issue
58): it opens, every other memory is served, and the memory set aside is reported, not hidden. The
real app in-process on the data directory edb1c0f left; the trash's whereabouts on a Chroma server."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
from starlette.routing import Mount

from symbiote.config import Settings
from symbiote.console.state import console_state
from tests.conftest import make_app
from tests.storage.test_additions import _broken_store


async def test_health_and_the_console_report_a_memory_set_aside_and_serve_the_rest(
    settings: Settings, tmp_path: Path
) -> None:
    app = make_app(dataclasses.replace(settings, chromadb_path=_broken_store(tmp_path)))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            await app.state.runtime.engine.stats()  # opened
            health = (await http.get("/health")).json()
            stats = await http.get("/console/stats")
            tags = await http.get("/console/tags")
    assert health["status"] == "ok" and health["store"] == "ready" and health["memories"] == 0, health
    assert health["set_aside"]["memories"] == 1 and "lone surrogate" in health["set_aside"]["why"]
    assert stats.status_code == 200 and tags.status_code == 200
    assert "Set aside: 1 memory an earlier release could not write" in stats.text
    assert "my bike is blue" in stats.text


async def test_the_trash_page_says_where_the_trash_lives_on_a_chroma_server(settings: Settings) -> None:
    for per_instance in (False, True):
        app = make_app(settings)
        console = next(route.app for route in app.routes if isinstance(route, Mount) and route.path == "/console")
        console.state.console = dataclasses.replace(console_state(console), trash_per_instance=per_instance)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
                page = await http.get("/console/trash")
        assert page.status_code == 200
        assert ("this trash is this instance's own" in page.text) is per_instance
