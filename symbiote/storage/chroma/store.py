"""`MemoryStore` on Chroma (vectors, the source of truth) plus the FTS5 keyword index.

Takes any Chroma client, so the embedded store's (`symbiote.storage.chroma.embedded`, Chroma's Rust
core) and a Chroma server's `HttpClient` are interchangeable. Calls block; the engine runs them in worker threads.

Layout: one record per memory in `venom_memories` (vector of the whole text, i.e. its first
256 tokens, exactly what sentence-transformers gives) plus, in `venom_memories_chunks`, one
record per extra passage (each sentence of a multi-sentence memory; paragraphs and 128-token
spans of a long one). Search keeps each memory's best passage. A write given only the whole
text's vector queues the passages, which are indexed right after (`symbiote.storage.chroma.passages`).

Consistency: a store changes Chroma and the keyword index together or not at all (the index
transaction commits only after the Chroma write succeeded; a failed commit undoes the Chroma
write). An update, a delete for good or a move into or out of the trash marks the memory in the side database
first, writes Chroma, then the keyword index and clears the mark; a mark a failure or a crash
left is settled against Chroma (`symbiote.storage.chroma.trashing`). In the store process a new memory's Chroma write follows its answer,
with the next stores', from a journal committed with the index (`symbiote.storage.chroma.additions`). An index
that is missing or disagrees with Chroma at open (the journal written first) is rebuilt from
Chroma, which is the source of truth.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import KeywordMatch, Match, StoredMemory, TrashedMemory
from symbiote.storage.chroma.additions import WAITING_AT_MOST, Additions
from symbiote.storage.chroma.batches import BatchedCollection, max_batch_size
from symbiote.storage.chroma.bulk_reads import BulkReads, read_all
from symbiote.storage.chroma.bulk_reads import chunk_ids as _chunk_ids
from symbiote.storage.chroma.candidates import CandidateSearch
from symbiote.storage.chroma.codec import check_identity, memory_from, metadata_of, repaired
from symbiote.storage.chroma.passages import DeferredPassages, chunk_records
from symbiote.storage.chroma.segment_files import REBUILDABLE, rebuilt, waiting
from symbiote.storage.chroma.side_database import SideDatabase
from symbiote.storage.chroma.trashing import Trash
from symbiote.storage.chroma.vectors import MirroredCollection, VectorIndex, VectorRows
from symbiote.storage.diskspace import directory_bytes
from symbiote.storage.filters import MemoryFilter
from symbiote.storage.fusion import Candidate, Fusion

if TYPE_CHECKING:  # annotations only: numpy is not on the way to `initialize`
    import numpy as np

log = logging.getLogger(__name__)

MEMORY_COLLECTION = "venom_memories"
CHUNK_COLLECTION = "venom_memories_chunks"


class ChromaMemoryStore:
    """Memories in two Chroma collections, keywords in a `SideDatabase`."""

    def __init__(
        self,
        client: Any,
        model_name: str,
        dimension: int,
        lexical: SideDatabase,
        data_path: Path | None = None,
        vectors_in_memory: bool = False,
        write_behind: bool = False,
    ) -> None:
        """`vectors_in_memory`: search a copy of every vector held here (`symbiote.storage.chroma.vectors`),
        for a store no other process writes to; it is read from Chroma by `idle_step`. `write_behind`:
        `store_new` answers before its Chroma write, which `settle` does (`symbiote.storage.chroma.additions`),
        for a store whose every call is followed by `settle`."""
        self._client = client
        self._data_path = data_path
        self._lexical = lexical
        identity = {"embedding_model": model_name, "embedding_dim": dimension}
        config = {"hnsw": {"space": "cosine"}}
        memories = client.get_or_create_collection(
            MEMORY_COLLECTION, metadata=identity, configuration=config, embedding_function=None
        )
        check_identity(memories, model_name, dimension)
        chunks = client.get_or_create_collection(
            CHUNK_COLLECTION, metadata=identity, configuration=config, embedding_function=None
        )
        # Every write within Chroma's maximum batch, asked of it once (`symbiote.storage.chroma.batches`).
        most = max_batch_size(client)
        self._memories: Any = BatchedCollection(memories, most)
        self._chunks: Any = BatchedCollection(chunks, most)
        self._write_behind = write_behind
        self._vectors: VectorIndex | None = None
        if vectors_in_memory:
            self._memories = MirroredCollection(self._memories, VectorRows(dimension, passages=False))
            self._chunks = MirroredCollection(self._chunks, VectorRows(dimension, passages=True))
            self._vectors = VectorIndex(self._memories, self._chunks)
        self._bulk = BulkReads(self._memories, self._chunks, lexical, self.get)
        self._candidates = CandidateSearch(
            self._memories, self._chunks, self._vectors, lexical, self.get, self._keywords_current
        )
        self._passages = DeferredPassages(self._chunks, lexical, self.get)
        self._additions = Additions(self._memories, self._chunks, lexical, self._passages, self._held_rows)
        self._write_journal()  # before anything reads Chroma
        self._trash = Trash(self._memories, self._chunks, lexical, self._write_journal)
        self._trash.settle()  # a delete or restore a crash interrupted: finished before anything reads
        self._sync_lexical()
        self._rebuilding = waiting(data_path) & REBUILDABLE if data_path is not None else set()
        if self._rebuilding:
            self._queue_rebuild()

    def _write_journal(self) -> None:
        """Write to Chroma what the journal holds (after a crash, or a settle Chroma refused, e.g. on a
        full disk), and queue the passages of those written."""
        replayed = self._additions.replay()
        if replayed:
            with self._lexical.transaction() as tx:
                for mid in replayed:
                    tx.queue_passages(mid, None)

    def _queue_rebuild(self) -> None:
        """A vector index was damaged and set aside (`symbiote.storage.chroma.segment_files`): every memory is queued, so the
        engine embeds its text again (`symbiote.memory.passage_indexing`) and `add_passages` writes
        the vectors. Queued at every open until done: a crash meanwhile only repeats work."""
        ids = sorted(self._lexical.ids())
        with self._lexical.transaction() as tx:
            for mid in ids:
                tx.queue_passages(mid, None)
        log.warning("making the vectors of %d memories again (%s)", len(ids), ", ".join(sorted(self._rebuilding)))
        self._rebuild_done()

    def _rebuild_done(self) -> None:
        if self._rebuilding and self._data_path is not None and not self._lexical.pending(1):
            rebuilt(self._data_path)
            self._rebuilding = set()

    def _rebuild_vectors(self, items: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> None:
        """The whole texts' vectors of memories being rebuilt, written back under their stored records."""
        wholes = {
            mid: (vectors[0], windows[0]) for mid, vectors, windows in items if windows and len(vectors) == len(windows)
        }
        if MEMORY_COLLECTION not in self._rebuilding or not wholes:
            return
        got = self._memories.get(ids=list(wholes), include=["documents", "metadatas"])
        keep = [
            (rid, doc, meta)
            for rid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
            if doc == wholes[rid][1]  # not rewritten since it was queued
        ]
        if keep:
            self._memories.upsert(
                ids=[rid for rid, _doc, _meta in keep],
                embeddings=[wholes[rid][0].tolist() for rid, _doc, _meta in keep],
                documents=[doc for _rid, doc, _meta in keep],
                metadatas=[meta for _rid, _doc, meta in keep],
            )

    def idle_step(self) -> bool:
        """A step of the work done while no call waits: reading the vectors into memory, writing
        the passages held in memory to Chroma, then holding the keyword scores searches asked for.
        True while there is more to do."""
        if self._additions.waiting:  # no call for a while: the writes behind go to Chroma now
            self._additions.settle()
            return True
        if self._vectors is not None and not self._rebuilding and self._vectors.load_step():
            return True
        if self._passages.holding:
            self._passages.write_step()
            return True
        return self._lexical.idle_step()

    def _keywords_current(self) -> None:
        """Before a keyword read: nothing here, where this instance is the only writer (a Chroma
        server's store catches up with the other instances': `ServerMemoryStore`)."""

    def settle(self) -> None:
        """The Chroma writes of the memories `store_new` answered for before making them (with
        `write_behind`); nothing otherwise."""
        self._additions.settle()

    def defers(self, method: str) -> bool:
        """Whether a call of `method` may be served with Chroma writes still behind: storing or its
        links, while few wait (storing checks them itself); any other call could read what waits."""
        return method in ("store_new", "set_links") and self._additions.waiting < WAITING_AT_MOST

    def close(self) -> None:
        """Close the Chroma client and the keyword index (e.g. before reopening the store to see another
        writer's changes)."""
        self._candidates.close()
        self._additions.settle()
        self._passages.write_all()  # else indexed again after the next open, from the queue
        self._lexical.close()
        try:
            self._client.close()  # chromadb.api.client.Client, embedded or a server's
        except Exception:  # the store is being let go of either way; the failure is logged
            log.debug("closing the Chroma client failed", exc_info=True)

    def _sync_lexical(self) -> None:
        """Rebuild the keyword index from Chroma when it is missing or out of step."""
        if self._lexical.count() == self._memories.count():
            return
        everything = read_all(self._memories, ["documents", "metadatas"])
        rows = [
            (mid, int((meta or {}).get("created_us", 0)), doc or "")
            for mid, doc, meta in zip(everything["ids"], everything["documents"] or [], everything["metadatas"] or [])
        ]
        self._lexical.rebuild(rows)
        self._passages.queue_unindexed(everything)
        log.warning("keyword index rebuilt from Chroma (%d memories)", len(rows))

    # -- passages indexed after storing (symbiote.storage.chroma.passages) ----------------------------

    def pending_passages(self, limit: int) -> list[tuple[str, list[str] | None, str]]:
        return self._passages.pending_passages(limit)

    def add_passages(self, items: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> int:
        if self._rebuilding:
            self._rebuild_vectors(items)
        done = self._passages.add_passages(
            [
                (mid, vectors[1:] if len(vectors) == len(windows) else vectors, windows)
                for mid, vectors, windows in items
            ]
        )
        self._rebuild_done()
        return done

    # -- bulk reads (symbiote.storage.chroma.bulk_reads) --------------------------------------------

    def browse(self, where: MemoryFilter | None, offset: int, limit: int) -> tuple[list[StoredMemory], int]:
        return self._bulk.browse(where, offset, limit)

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._bulk.vectors(memory_ids)

    # -- the trash (symbiote.storage.chroma.trashing) ---------------------------------------------

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        return self._trash.trash(memory_ids, deleted_by, deleted_us)

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        return self._trash.restore(memory_ids)

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        return self._trash.purge(memory_ids)

    def trashed(
        self, offset: int, limit: int, memory_ids: Sequence[str] | None = None
    ) -> tuple[list[TrashedMemory], int]:
        return self._trash.trashed(offset, limit, memory_ids)

    # -- writes ----------------------------------------------------------------------------

    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None:
        self.add_many([(memory, vectors, windows)])

    def add_many(self, items: Sequence[tuple[StoredMemory, np.ndarray, Sequence[str]]]) -> None:
        """All stored or none (`symbiote.storage.chroma.additions`)."""
        self._additions.add(items, behind=False)

    def _holding(self) -> bool:
        """Whether the memories' vectors and records are held here, complete: what waits is found among them."""
        return self._vectors is not None and self._vectors.ready and self._memories.held

    def _held_rows(self) -> VectorRows | None:
        """The passage vectors held in memory, while searches may use them."""
        return self._chunks.rows if self._vectors is not None and self._vectors.ready else None

    def store_new(
        self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str], near: int
    ) -> tuple[StoredMemory | None, list[tuple[StoredMemory, float]]]:
        """A store in one call: the memory already stored with the same text (then nothing is
        written), or None and the `near` closest memories (with their links, for
        `symbiote.memory.links`) and their cosines, before this one was added."""
        held = self._holding()
        if not held:  # what waits is found among the vectors held in memory only
            self._additions.settle()
        existing = self._additions.waiting_with(memory.content_hash) or self.find_content(memory.content_hash)
        if existing is not None:
            return existing, []
        if self._vectors is not None and held:
            nearest = self._vectors.whole.nearest(vectors[0], near)
            found = self.get([mid for mid, _ in nearest])  # held records: no query into Chroma
            close = [(found[mid], similarity) for mid, similarity in nearest if mid in found]
        else:
            got = self._memories.query(
                query_embeddings=[vectors[0].tolist()], n_results=near, include=["distances", "documents", "metadatas"]
            )
            close = [
                (memory_from(mid, doc, meta), 1.0 - float(distance))
                for mid, distance, doc, meta in zip(
                    got["ids"][0], got["distances"][0], (got["documents"] or [[]])[0], (got["metadatas"] or [[]])[0]
                )
            ]
        self._additions.add([(memory, vectors, windows)], behind=self._write_behind and held)
        return None, close

    def replace(self, memory: StoredMemory, vectors: np.ndarray | None, windows: Sequence[str]) -> None:
        self._trash.settle()
        old = self._memories.get(ids=[memory.memory_id], include=["metadatas"])
        if not old["ids"]:
            raise KeyError(memory.memory_id)
        old_passages = int((old["metadatas"] or [{}])[0].get("windows", 1) or 1)
        if vectors is None:  # metadata only: text, vectors and keyword entry stay
            self._memories.update(ids=[memory.memory_id], metadatas=[metadata_of(memory, old_passages, True)])
            return
        # Marked first, unmarked with the new keyword entry: a failure or a crash between leaves the
        # keyword entry and passages to be put in step with Chroma's text (`Trash.settle`).
        with self._lexical.transaction(durable=True):
            self._lexical.trash.mark([memory.memory_id])
        try:
            stale = _chunk_ids(memory.memory_id, old_passages)
            if stale:
                self._chunks.delete(ids=stale)
            ids, part_vectors, docs, meta = chunk_records(memory, vectors[1:], windows)
            if ids:
                self._chunks.add(ids=ids, embeddings=part_vectors, documents=docs, metadatas=meta)
            self._memories.update(
                ids=[memory.memory_id],
                embeddings=vectors[:1].tolist(),
                documents=[memory.content],
                metadatas=[metadata_of(memory, len(windows), True)],
            )
        except Exception:
            self._settle_after_failure()
            raise
        try:
            with self._lexical.transaction() as tx:
                tx.delete(memory.memory_id)
                tx.add(memory.memory_id, memory.created_us, memory.content)
                self._lexical.trash.unmark([memory.memory_id])
        except Exception as exc:
            raise StoreUnavailableError(
                f"The new text of {memory.memory_id} is stored, but its keyword entry could not follow ({exc}); "
                "it is brought in step at the next update, delete or start. Search by meaning finds the new text now."
            ) from exc

    def _settle_after_failure(self) -> None:
        """After a failed write under a mark: its keyword entry and passages put in step with Chroma now,
        or (if this fails too) at the next write or start."""
        try:
            self._trash.settle()
        except Exception:
            log.exception("settling a failed write failed; settled at the next write or start")

    def set_links(self, memories: Sequence[StoredMemory]) -> None:
        """With `write_behind`, written with the memories waiting (`symbiote.storage.chroma.additions`)."""
        self._additions.link(memories, behind=self._write_behind and self._holding())

    def delete(self, memory_id: str) -> bool:
        return bool(self.delete_many([memory_id]))

    def delete_many(self, memory_ids: Sequence[str]) -> list[str]:
        self._trash.settle()
        if not memory_ids:
            return []
        got = self._memories.get(ids=list(memory_ids), include=["metadatas"])
        present = [
            (mid, int((meta or {}).get("windows", 1) or 1)) for mid, meta in zip(got["ids"], got["metadatas"] or [])
        ]
        if not present:
            return []
        ids = [mid for mid, _ in present]
        with self._lexical.transaction(durable=True):  # a keyword entry left by a failure is dropped at settle
            self._lexical.trash.mark(ids)
        try:
            self._additions.delete_vectors(present)
        except Exception:
            self._settle_after_failure()
            raise
        with self._lexical.transaction() as tx:
            for memory_id in ids:
                tx.delete(memory_id)
            self._lexical.trash.unmark(ids)
        return ids

    # -- reads -----------------------------------------------------------------------------

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]:
        if not memory_ids:
            return {}
        if self._vectors is not None:
            held = self._memories.records(memory_ids)
            return {mid: memory_from(mid, *held[mid]) for mid in memory_ids if mid in held}
        got = self._memories.get(ids=list(memory_ids), include=["documents", "metadatas"])
        return {
            mid: memory_from(mid, doc, meta)
            for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        }

    def _surely_new(self, hashes: Sequence[str]) -> bool:
        """Whether the vectors held here show that no memory has any of these texts (no query needed)."""
        return self._holding() and not any(self._memories.rows.holds_content(digest) for digest in hashes)

    def find_content(self, content_hash: str) -> StoredMemory | None:
        return self.find_contents([content_hash]).get(content_hash)

    def find_contents(self, hashes: Sequence[str]) -> dict[str, StoredMemory]:
        """Existing memories by content hash, one query for a whole batch."""
        if not hashes or self._surely_new(hashes):
            return {}
        return self._bulk.by_content(hashes)

    def counts(self) -> dict[str, int]:
        """Records per collection: memories, extra passages, keyword index entries, and memories whose
        passages are still queued (indexed right after their store)."""
        memories, passages = self.count(), self._count(self._chunks)
        return {
            "memories": memories,
            "passages": passages,
            "keyword_index": self._lexical.count(),
            "passages_queued": self._lexical.pending_count(),
            "set_aside": self._lexical.unwritten.aside_count(),
        }

    def set_aside(self) -> list[tuple[StoredMemory, str]]:
        """The journal rows set aside at open (`symbiote.storage.chroma.additions`), readable."""
        return [
            (repaired(memory_from(mid, body, meta)), why) for mid, body, meta, why in self._lexical.unwritten.aside()
        ]

    def losses(self) -> list[str]:
        """What an open could not read out of a damaged side database (`symbiote.storage.chroma.salvage`)."""
        return [
            f"The side database was damaged and set aside as {file}, beside it; {what} could not be read, so "
            "memories acknowledged just before (the write-behind journal) or in the trash may be missing. "
            f"`sqlite3 {file} .recover` reads what is left: store again any memory it shows that search does not "
            f"find. Move {file} out of the data directory to clear this (at the next start)."
            for file, what in self._lexical.losses()
        ]

    # -- searches (symbiote.storage.chroma.candidates) ---------------------------------------------

    def nearest(
        self, vector: np.ndarray, k: int, where: MemoryFilter | None = None, passages: bool = True
    ) -> list[Match]:
        return self._candidates.nearest(vector, k, where, passages)

    def keyword(self, text: str, k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        return self._candidates.keyword(text, k, where)

    def keyword_words(self, words: Sequence[str], k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        return self._candidates.keyword_words(words, k, where)

    def search(
        self,
        vector: np.ndarray,
        text: str,
        k: int,
        topic_words: Sequence[str],
        topic_k: int,
        where: MemoryFilter | None,
        fusion: Fusion,
    ) -> tuple[list[Candidate], dict[str, StoredMemory], dict[str, np.ndarray]]:
        return self._candidates.search(vector, text, k, topic_words, topic_k, where, fusion)

    def count_from(self, conversation_id: str, since_us: int) -> int:
        got = self._memories.get(
            where={"$and": [{"conversation_id": conversation_id}, {"created_us": {"$gte": since_us}}]}, include=[]
        )
        return len(got["ids"])

    def count(self) -> int:
        return self._count(self._memories)

    def _count(self, collection: Any) -> int:
        """Records in a collection: its rows held here if it has them (Chroma counts in a query)."""
        if self._vectors is not None and self._vectors.ready and collection.held:
            return len(collection.rows)
        return int(collection.count())

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]:
        return self._bulk.page(limit, before_us)

    def scan(self, where: MemoryFilter | None = None) -> list[StoredMemory]:
        return self._bulk.scan(where)

    def size_bytes(self) -> int:
        return directory_bytes(self._data_path) if self._data_path is not None else 0
