"""A memory within the model's window brings its sentences' vectors with its store, searchable at
once; a long memory's spans are indexed right after, from a queue in the store's files that
survives a stop, a crash and a lost keyword index."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import replace

import pytest

from symbiote.config import Settings
from symbiote.memory import MemoryEngine, SearchRequest, StoreRequest, UpdateRequest
from symbiote.storage.base import SIDE_DATABASE_FILE, MemoryStore
from tests.conftest import make_runtime

TEXT = "We adopted a puppy last spring. Her name is Pepper and she loves the beach. She hates baths."
SENTENCE_QUESTION = "what is the name of the dog?"
FILLER = " ".join(
    f"Line {n} of the meeting notes covers the budget, the schedule and the staffing plan." for n in range(14)
)
LONG = (
    f"{FILLER}\n\n{FILLER}\n\nThe new office manager is named Persephone and starts in March."  # 3 paragraphs, 7 spans
)
LONG_QUESTION = "who is the new office manager?"


def _hold(engine: MemoryEngine) -> None:
    """No indexing until `_release`: the sentences stay in the queue, as when a crash comes first."""
    engine._writer.passages.kick = lambda: None  # type: ignore[method-assign]


def _release(engine: MemoryEngine) -> None:
    del engine._writer.passages.kick


async def _counts(engine: MemoryEngine) -> dict[str, int]:
    return await engine._io.read(MemoryStore.counts)


async def _queued(engine: MemoryEngine) -> list[str]:
    return [mid for mid, _w, _t in await engine._io.read(MemoryStore.pending_passages, 100)]


async def test_sentences_come_with_the_store(settings: Settings) -> None:
    engine = make_runtime(settings).engine
    try:
        _hold(engine)  # nothing is left for the indexer: the store wrote them
        stored = await engine.store(StoreRequest(TEXT))
        assert (await _counts(engine))["passages"] == 3
        assert await _queued(engine) == []
        hits = (await engine.search(SearchRequest(SENTENCE_QUESTION))).results
        assert hits and hits[0].memory_id == stored.memory_id
        assert (
            await engine.store(StoreRequest(TEXT))
        ).status == "duplicate"  # the one-call store still sees duplicates
    finally:
        engine.close()


async def test_a_long_memory_s_spans_follow_the_store_and_leave_the_queue(settings: Settings) -> None:
    engine = make_runtime(settings).engine
    try:
        _hold(engine)
        stored = await engine.store(StoreRequest(LONG))
        assert len(await _queued(engine)) == 1 and (await _counts(engine))["passages"] == 0
        _release(engine)
        engine._writer.passages.kick()
        assert "still being indexed" in (await engine.search(SearchRequest(LONG_QUESTION))).message  # said while it is
        await engine.passages_indexed()
        assert await _queued(engine) == [] and (await _counts(engine))["passages"] == 7
        found = await engine.search(SearchRequest(LONG_QUESTION))
        assert found.results[0].memory_id == stored.memory_id and "still being indexed" not in found.message
    finally:
        engine.close()


async def test_what_a_stop_left_queued_is_indexed_at_the_next_open(settings: Settings) -> None:
    engine = make_runtime(settings).engine
    _hold(engine)
    stored = await engine.store(StoreRequest(LONG))
    batch = await engine.store_many([{"content": "First point. Second point here."}, {"content": "One line"}])
    assert len(await _queued(engine)) == 1 and (await _counts(engine))["passages"] == 2
    engine.close()
    again = make_runtime(settings).engine
    try:
        await again.passages_indexed()
        assert await _queued(again) == []
        assert (await _counts(again))["passages"] == 7 + 2
        hits = (await again.search(SearchRequest(LONG_QUESTION))).results
        assert hits and hits[0].memory_id == stored.memory_id
        assert batch.stored == 2
    finally:
        again.close()


async def test_a_memory_deleted_or_rewritten_before_indexing_gets_no_stale_passages(settings: Settings) -> None:
    engine = make_runtime(settings).engine
    try:
        _hold(engine)
        gone = await engine.store(StoreRequest(LONG))
        kept = await engine.store(StoreRequest(LONG.replace("Persephone", "Ariadne")))
        await engine.delete(gone.memory_id)
        await engine.update(UpdateRequest(kept.memory_id, content="Rewritten now. Three sentences. All new."))
        _release(engine)
        await engine.passages_indexed()
        assert await _queued(engine) == []
        assert (await _counts(engine))["passages"] == 3  # the rewritten text's, embedded by the update
    finally:
        engine.close()


async def test_a_lost_keyword_index_queues_the_passages_chroma_lacks(settings: Settings) -> None:
    engine = make_runtime(settings).engine
    _hold(engine)
    await engine.store(StoreRequest(TEXT))
    engine.close()
    for suffix in ("", "-wal", "-shm"):
        path = settings.chromadb_path / f"{SIDE_DATABASE_FILE}{suffix}"
        if path.exists():
            path.unlink()
    again = make_runtime(settings).engine
    try:
        await again.passages_indexed()
        assert (await _counts(again))["passages"] == 3
        assert (await _counts(again))["keyword_index"] == 1
    finally:
        again.close()


async def test_a_killed_store_process_loses_no_sentence_it_held(settings: Settings) -> None:
    runtime = make_runtime(replace(settings, store_process=True))
    engine = runtime.engine
    try:
        await engine.store(StoreRequest("Warm up the store. Two sentences."))
        await engine.passages_indexed()  # the vectors are read into the store process's memory
        stored = await engine.store(
            StoreRequest(TEXT)
        )  # its sentences are held in the store process, maybe not yet written
        host = runtime.store_process
        assert host is not None and host.pid is not None
        os.kill(host.pid, signal.SIGKILL)
        await engine.passages_indexed()  # the next call starts a new store process, which has the queue
        assert (await _counts(engine))["passages"] == 2 + 3
        hits = (await engine.search(SearchRequest(SENTENCE_QUESTION))).results
        assert hits and hits[0].memory_id == stored.memory_id
    finally:
        engine.close()


@pytest.mark.slow
async def test_a_search_right_after_a_burst_finds_what_a_settled_one_finds(settings: Settings) -> None:
    """The store process holds the burst's sentences in memory until no request comes: a search
    asked at once finds by a sentence exactly what the same search finds once they are written."""
    runtime = make_runtime(replace(settings, store_process=True))
    engine = runtime.engine
    try:
        await engine.store(StoreRequest("Warm up the store. Two sentences."))
        await engine.passages_indexed()
        for n in range(30):
            await engine.store(
                StoreRequest(f"Turn {n} of the chat. Nothing much happened on day {n}. The weather was mild.")
            )
        stored = await engine.store(StoreRequest(TEXT))
        at_once = await engine.search(SearchRequest(SENTENCE_QUESTION))
        assert (await _counts(engine))["passages_queued"] > 0  # held, not yet written to Chroma
        await engine.passages_indexed()
        for _ in range(100):  # written between requests, once none came for a moment
            if (await _counts(engine))["passages_queued"] == 0:
                break
            await asyncio.sleep(0.1)
        later = await engine.search(SearchRequest(SENTENCE_QUESTION))
        assert at_once.results[0].memory_id == stored.memory_id
        assert [(h.memory_id, h.relevance_score) for h in at_once.results] == [
            (h.memory_id, h.relevance_score) for h in later.results
        ]
        assert (await _counts(engine))["passages"] == 2 + 30 * 3 + 3
    finally:
        engine.close()
