"""A background job that keeps failing backs off, says so once in the log and in /health, and
never spins (issue 39: the passage indexer retried a refused batch every minute at 187 % CPU,
logging every try). The failure is real: the passages' Chroma collection is dropped under the store,
and a long memory's spans are left for the indexer to write."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from symbiote.config import Settings
from symbiote.http.health import health_report
from symbiote.memory.requests import StoreRequest
from symbiote.storage.chroma import embedded_client
from symbiote.storage.chroma.embedded import DATABASE, TENANT
from symbiote.storage.chroma.store import CHUNK_COLLECTION
from tests.conftest import make_runtime

LONG = "\n\n".join(
    f"Paragraph {n} of the notes: " + "the budget, the schedule and the staffing plan. " * 12 for n in range(4)
)


@pytest.mark.slow
async def test_a_failing_indexer_backs_off_logs_once_and_shows_in_health(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = make_runtime(settings)
    engine = runtime.engine
    try:
        await engine.store(StoreRequest("A first sentence here. A second sentence there."))
        await engine.passages_indexed()
        other = embedded_client(settings.chromadb_path)  # a second client of the store's own core
        other.bindings.delete_collection(CHUNK_COLLECTION, TENANT, DATABASE)
        other.close()
        caplog.set_level(logging.DEBUG, logger="symbiote")
        started = time.monotonic()
        await engine.store(StoreRequest(LONG))  # its spans follow the store: the indexer's to write
        indexer = engine._writer.passages
        while indexer.backoff.failures < 2:  # tries at about 0, 1 and 3 s: then 4 s, 8 s, ... up to 5 minutes
            assert time.monotonic() - started < 10, indexer.backoff.failures
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # time for a try that does not back off to show
        assert 2 <= indexer.backoff.failures <= 3, indexer.backoff.failures
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and "indexing passages" in r.message]
        assert len(warnings) == 1, [r.message for r in warnings]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no trace at every try
        report = await health_report(runtime, [])
        assert report["status"] == "degraded"
        assert "indexing passages failing since" in report["background_errors"]["passages"]
        assert time.monotonic() - started < 10
    finally:
        runtime.close()
