"""Every owner closes what it opens: a runtime (and an app, through its lifespan) built, used and
closed lets go of everything: nothing keeps it alive (the gauges' callbacks, Chroma's per-path
cache) and no thread it started is left. A server that reloads its app, an Azure host that
recycles it and the test suite all build many of them in one process."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import weakref
from dataclasses import replace

import httpx
import pytest
from mcp import Client

from symbiote.config import Settings
from symbiote.http.app import create_app
from symbiote.mcp import server
from symbiote.memory import SearchRequest, StoreRequest
from symbiote.runtime import Runtime, build_runtime
from symbiote.storage.chroma.embedded import EmbeddedChroma
from tests.conftest import shared_model


def started_since(before: set[threading.Thread]) -> list[str]:
    """Threads alive now that were not before, but the event loop's own pool (`asyncio_N`): the loop owns it."""
    return sorted(
        t.name for t in threading.enumerate() if t not in before and t.is_alive() and not t.name.startswith("asyncio_")
    )


async def use(runtime: Runtime) -> None:
    """A store, a search, a turn of history and a tool call through the MCP server (its telemetry
    refreshes the gauges): every part that opens something."""
    await runtime.engine.store(StoreRequest(content="We take the night train to Vienna every December."))
    assert (await runtime.engine.search(SearchRequest(query="train to Vienna"))).results
    assert runtime.history is not None
    await runtime.history.history.append("trip", "user", "The night train leaves at 21:40.")
    assert await runtime.history.history.search("when does the train leave")
    async with Client(runtime.server) as client:
        result = await client.call_tool("search_memory", {"query": "Vienna"})
        assert not result.is_error, result.content


@pytest.mark.parametrize("store_process", [False, True], ids=["in-process store", "store process"])
async def test_a_runtime_used_and_closed_is_collected_and_leaves_no_thread(
    settings: Settings, store_process: bool
) -> None:
    before = set(threading.enumerate())
    # Not `make_runtime`: what it keeps to close after the test would keep the runtime alive.
    runtime = build_runtime(replace(settings, store_process=store_process), load_model=shared_model)
    await use(runtime)
    child = runtime.store_process.pid if runtime.store_process is not None else None
    runtime.close()
    collected, engine = weakref.ref(runtime), weakref.ref(runtime.engine)
    del runtime
    gc.collect()
    assert collected() is None and engine() is None, gc.get_referrers(engine())
    assert started_since(before) == []
    if child is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)


async def test_an_app_closes_its_runtime_at_the_end_of_its_lifespan(settings: Settings) -> None:
    before = set(threading.enumerate())
    app = create_app(settings, load_model=shared_model)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            assert (await http.get("/health")).status_code == 200
        await use(app.state.runtime)
    collected = weakref.ref(app.state.runtime)
    del app, transport, http
    gc.collect()
    assert collected() is None
    assert started_since(before) == []


async def test_an_app_stopped_while_it_opens_its_store_leaves_no_store_open(settings: Settings) -> None:
    """The lifespan's warm-up opens the store in a worker thread; a stop before that open returned
    cancelled the one waiting for it, and the store it opened stayed open in this process (with its
    vectors, threads and files) for good."""
    before = set(EmbeddedChroma._cores)
    app = create_app(settings, load_model=shared_model)
    async with app.router.lifespan_context(app):
        while set(EmbeddedChroma._cores) == before:  # until the warm-up's thread is opening the store
            await asyncio.sleep(0)
    assert set(EmbeddedChroma._cores) == before


async def test_a_closed_embedder_lets_go_of_its_model_while_it_is_still_referenced() -> None:
    """A closed engine stays in reference cycles until a full collection: its model (an onnxruntime
    session of some 70 MB) must not wait for that."""
    from symbiote.embedding.embedder import AsyncEmbedder
    from symbiote.runtime import load_embedder
    from tests.conftest import MODEL_DIR

    embedder = AsyncEmbedder(lambda: load_embedder(MODEL_DIR))
    await embedder.embed(["The night train leaves at 21:40."])
    model = weakref.ref(await embedder.model())
    embedder.close()
    assert model() is None and not embedder.loaded


def test_the_first_runtime_of_a_process_is_collected_though_its_tools_are_kept(settings: Settings) -> None:
    """Each tool is built once per process and copied for later servers (`symbiote.mcp.server._built`):
    what is kept must not hold the function of the runtime that built it, or its engine lives on."""
    server._BUILT.clear()  # this test's first runtime builds the process's tools (other tests built them before)
    engines = []
    for n in range(2):
        built = build_runtime(replace(settings, chromadb_path=settings.chromadb_path / str(n)), load_model=shared_model)
        engines.append(weakref.ref(built.engine))
        built.close()
        del built
    gc.collect()
    assert [engine() for engine in engines] == [None, None]
