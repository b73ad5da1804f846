"""A store acknowledges once the whole text's vector is durable; its sentences are indexed right
after, from a queue in the store's files that survives a stop, a crash and a lost keyword index."""

from __future__ import annotations

import os
import signal
from dataclasses import replace

from symbiote.config import Settings
from symbiote.memory import MemoryEngine
from symbiote.runtime import build_runtime
from symbiote.storage.base import LEXICAL_FILE

TEXT = "We adopted a puppy last spring. Her name is Pepper and she loves the beach. She hates baths."
SENTENCE_QUESTION = "what is the name of the dog?"


def _hold(engine: MemoryEngine) -> None:
    """No indexing until `_release`: the sentences stay in the queue, as when a crash comes first."""
    engine._writer.passages.kick = lambda: None  # type: ignore[method-assign]


def _release(engine: MemoryEngine) -> None:
    del engine._writer.passages.kick


async def _counts(engine: MemoryEngine) -> dict[str, int]:
    return await engine._io.read((await engine._io.opened()).counts)


async def _queued(engine: MemoryEngine) -> list[str]:
    return [mid for mid, _w, _t in await engine._io.read((await engine._io.opened()).pending_passages, 100)]


async def test_sentences_follow_the_store_and_leave_the_queue(settings: Settings) -> None:
    engine = build_runtime(settings).engine
    try:
        stored = await engine.store(TEXT)
        await engine.passages_indexed()
        assert (await _counts(engine))["passages"] == 3
        assert await _queued(engine) == []
        hits = (await engine.search(SENTENCE_QUESTION)).results
        assert hits and hits[0].memory_id == stored.memory_id
        assert (await engine.store(TEXT)).status == "duplicate"  # the one-call store still sees duplicates
    finally:
        engine.close()


async def test_what_a_stop_left_queued_is_indexed_at_the_next_open(settings: Settings) -> None:
    engine = build_runtime(settings).engine
    _hold(engine)
    stored = await engine.store(TEXT)
    batch = await engine.store_many([{"content": "First point. Second point here."}, {"content": "One line"}])
    assert len(await _queued(engine)) == 2 and (await _counts(engine))["passages"] == 0
    engine.close()
    again = build_runtime(settings).engine
    try:
        await again.passages_indexed()
        assert await _queued(again) == []
        assert (await _counts(again))["passages"] == 3 + 2
        hits = (await again.search(SENTENCE_QUESTION)).results
        assert hits and hits[0].memory_id == stored.memory_id
        assert batch.stored == 2
    finally:
        again.close()


async def test_a_memory_deleted_or_rewritten_before_indexing_gets_no_stale_passages(settings: Settings) -> None:
    engine = build_runtime(settings).engine
    try:
        _hold(engine)
        gone = await engine.store("Delete me soon. I have two sentences.")
        kept = await engine.store("Rewrite me soon. I have two sentences too.")
        await engine.delete(gone.memory_id)
        await engine.update(kept.memory_id, content="Rewritten now. Three sentences. All new.")
        _release(engine)
        await engine.passages_indexed()
        assert await _queued(engine) == []
        assert (await _counts(engine))["passages"] == 3  # the rewritten text's, embedded by the update
    finally:
        engine.close()


async def test_a_lost_keyword_index_queues_the_passages_chroma_lacks(settings: Settings) -> None:
    engine = build_runtime(settings).engine
    _hold(engine)
    await engine.store(TEXT)
    engine.close()
    for suffix in ("", "-wal", "-shm"):
        path = settings.chromadb_path / f"{LEXICAL_FILE}{suffix}"
        if path.exists():
            path.unlink()
    again = build_runtime(settings).engine
    try:
        await again.passages_indexed()
        assert (await _counts(again))["passages"] == 3
        assert (await _counts(again))["keyword_index"] == 1
    finally:
        again.close()


async def test_a_killed_store_process_loses_no_queued_sentence(settings: Settings) -> None:
    runtime = build_runtime(replace(settings, store_process=True))
    engine = runtime.engine
    try:
        _hold(engine)
        stored = await engine.store(TEXT)  # its sentences are queued, not indexed, when the store dies
        host = runtime.store_process
        assert host is not None and host.pid is not None
        os.kill(host.pid, signal.SIGKILL)
        _release(engine)
        await engine.passages_indexed()  # the next call starts a new store process, which has the queue
        assert (await _counts(engine))["passages"] == 3
        hits = (await engine.search(SENTENCE_QUESTION)).results
        assert hits and hits[0].memory_id == stored.memory_id
    finally:
        engine.close()
