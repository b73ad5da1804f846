"""New memories into the keyword index and Chroma: all or none, or the Chroma write behind the answer.

`add` writes the keyword index and Chroma together: the index transaction commits only after the
Chroma write succeeded, and a failed commit undoes the Chroma write.

Write-behind, in the store process. Chroma's add of one memory was storing's largest stage: 12-13
ms of CPU for one memory, 1.1 ms a memory for 32 in one call (its core commits several SQLite
transactions per call, whatever it holds). So a new memory is committed to the keyword index
together with a journal row holding all Chroma needs (text, metadata, the whole text's vector),
put among the vectors and records held in memory, and answered for; its Chroma write waits, with
the next memories', until a call other than storing comes, until no call came for 50 ms (the
store's `idle_step`), or until WAITING_AT_MOST are waiting: then all of them go to Chroma in one
call (`settle`). `symbiote.storage.chroma.process.child` settles before any call that could read
what is waiting (`ChromaMemoryStore.defers`), so no call sees the store in between; a store in
the meantime checks the waiting memories for its duplicate and among its nearest. A crash loses
nothing: the next open writes the journal's rows into Chroma before anything else reads it.

A store that links the new memory to an older one (an update, a duplicate: `set_links`) waits the
same way: the links are journalled (`unlinked`), shown at once on the records held in memory, and
written to Chroma in one call after the memories, when they settle. Before, that call first wrote
every waiting memory and then the links, 17-40 ms, in 4 % of a conversation's stores.

The journal is committed with `synchronous=FULL` (the keyword index's own commits are NORMAL):
an acknowledged memory survives a power cut, as it did when Chroma's commit acknowledged it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symbiote.errors import InvalidInputError
from symbiote.storage import text
from symbiote.storage.chroma.bulk_reads import chunk_ids
from symbiote.storage.chroma.codec import link_metadata, metadata_of
from symbiote.storage.chroma.passages import passage_records
from symbiote.storage.chroma.side_database import Item

if TYPE_CHECKING:
    from symbiote.storage.base import StoredMemory
    from symbiote.storage.chroma.passages import DeferredPassages
    from symbiote.storage.chroma.side_database import SideDatabase
    from symbiote.storage.chroma.vectors import VectorRows

log = logging.getLogger(__name__)

WAITING_AT_MOST = 32  # memories whose Chroma write waits at most; then storing writes them first


class Additions:
    """Writes new memories (and the passages that come with their vectors) into a store's
    collections and keyword index, and keeps the ones whose Chroma write is still to come, in order."""

    def __init__(
        self,
        memories: Any,
        chunks: Any,
        lexical: SideDatabase,
        passages: DeferredPassages,
        rows: Callable[[], VectorRows | None],
    ) -> None:
        """`rows`: the passage vectors held in memory while searches may use them, else None.
        `memories`: with writes behind, a `MirroredCollection` (what waits is held in it)."""
        self._memories = memories
        self._chunks = chunks
        self._lexical = lexical
        self._passages = passages
        self._rows = rows
        self._waiting: list[tuple[Sequence[Item], list[bool]]] = []
        self._waiting_texts: dict[str, StoredMemory] = {}  # content hash -> a memory waiting
        self._links: dict[str, dict[str, Any]] = {}  # memory id -> its link fields, to write after the memories

    @property
    def waiting(self) -> int:
        """How many memories' Chroma writes (and links') are behind their answers."""
        return len(self._waiting_texts) + len(self._links)

    def waiting_with(self, content_hash: str) -> StoredMemory | None:
        """The waiting memory with this text, if one is (Chroma cannot say yet)."""
        return self._waiting_texts.get(content_hash)

    def add(self, items: Sequence[Item], behind: bool) -> None:
        """One keyword transaction, one Chroma call per collection: all stored or none. An item with
        one vector for several windows has its passages queued (`symbiote.storage.chroma.passages`).
        `behind`: the Chroma write is journalled in a durable transaction and left to `settle`."""
        if not items:
            return
        written = False
        held = self._passages.to_hold(self._rows(), items)
        try:
            with self._lexical.transaction(durable=behind) as tx:
                for (memory, vectors, windows), holding in zip(items, held):
                    tx.add(memory.memory_id, memory.created_us, memory.content)
                    if len(windows) > 1 and (holding or len(vectors) < len(windows)):
                        tx.queue_passages(memory.memory_id, windows)
                if behind:
                    self._lexical.unwritten.put(items)
                else:
                    self._write(items, held)
                    written = True
        except BaseException:
            if written:  # the index commit failed after Chroma took the write: undo it
                self.delete_vectors([(m.memory_id, len(w)) for m, _v, w in items])
            raise
        if behind:  # held in memory as Chroma will have them: storing's nearest and `get` see them
            self._waiting.append((items, held))
            self._waiting_texts.update((memory.content_hash, memory) for memory, _v, _w in items)
            ids, whole, documents, metadatas = _records(items)
            self._memories.rows.put(ids, whole, metadatas)
            self._memories.hold(ids, documents, metadatas)

    def link(self, memories: Sequence[StoredMemory], behind: bool) -> None:
        """Write these memories' link fields; KeyError for one that is not stored. `behind`: journalled
        in a durable commit, shown on the records held in memory, and left to `settle`."""
        if not behind:
            self.settle()  # what waits must be in Chroma before Chroma's records are changed
        links = {m.memory_id: link_metadata(m, True) for m in memories}
        waiting = {m.memory_id for batch, _held in self._waiting for m, _v, _w in batch}
        others = [mid for mid in links if mid not in waiting]
        present = (
            set(self._memories.records(others)) if behind else set(self._memories.get(ids=others, include=[])["ids"])
        )
        for mid in others:
            if mid not in present:
                raise KeyError(mid)
        if not behind:
            self._memories.update(ids=list(links), metadatas=list(links.values()))
            return
        with self._lexical.transaction(durable=True):
            self._lexical.unwritten.put_links(links)
        self._links.update(links)
        self._memories.relink(links)

    def settle(self) -> None:
        """Write every waiting memory to Chroma in one call, then the waiting links in another. If one
        fails, what it held stays in the journal (logged): the next open writes it, as after a crash."""
        if self._waiting:
            items = [item for batch, _held in self._waiting for item in batch]
            held = [flag for _batch, flags in self._waiting for flag in flags]
            self._waiting.clear()
            self._waiting_texts.clear()
            ids = [memory.memory_id for memory, _v, _w in items]
            try:
                self._write(items, held)
            except Exception:
                log.exception("memories %s were not written to Chroma; the next open writes them from the journal", ids)
                self._links.clear()  # they may name those memories: written from the journal with them
                return
            self._lexical.unwritten.remove(ids)
        if self._links:
            links = dict(self._links)
            self._links.clear()
            try:
                self._memories.update(ids=list(links), metadatas=list(links.values()))
            except Exception:
                log.exception("the links of %s were not written to Chroma; the next open writes them", list(links))
                return
            self._lexical.unwritten.remove_links(list(links))

    def replay(self) -> list[str]:
        """At open, before anything reads the store: write what a crash left in the journal (an
        upsert, so a row whose write landed before the crash is written again unchanged). Returns
        the ids written whose passages the caller queues again."""
        rows = self._refused_set_aside(self._lexical.unwritten.all())
        if rows:
            ids = [mid for mid, _b, _m, _v in rows]
            try:
                self._upsert(rows)
            except (TypeError, ValueError):  # a row Chroma refuses (an earlier release journalled it): one by one
                for row in rows:
                    try:
                        self._upsert([row])
                    except (TypeError, ValueError) as exc:  # its checks' ValueError, its Rust core's TypeError
                        self._set_aside([row[0]], [f"Chroma refused it: {exc}"])
            self._lexical.unwritten.remove(ids)
            log.warning("%d memories acknowledged before a crash were written to Chroma from the journal", len(ids))
        links = self._lexical.unwritten.links()
        if links:
            present = set(self._memories.get(ids=list(links), include=[])["ids"])  # none deleted since: deletes settle
            if present:
                self._memories.update(ids=list(present), metadatas=[links[mid] for mid in present])
            self._lexical.unwritten.remove_links(list(links))
            log.warning(
                "the links of %d memories, acknowledged before a crash, were written from the journal", len(present)
            )
        return [mid for mid, _b, meta, _v in rows if int(meta.get("windows", 1) or 1) > 1]

    def _upsert(self, rows: Sequence[tuple[str, str, dict[str, Any], np.ndarray]]) -> None:
        self._memories.upsert(
            ids=[mid for mid, _b, _m, _v in rows],
            embeddings=[vector.tolist() for _i, _b, _m, vector in rows],
            documents=[body for _i, body, _m, _v in rows],
            metadatas=[meta for _i, _b, meta, _v in rows],
        )

    def _refused_set_aside(
        self, rows: list[tuple[str, str, dict[str, Any], np.ndarray]]
    ) -> list[tuple[str, str, dict[str, Any], np.ndarray]]:
        """The journal rows Chroma can take; those holding text that is not Unicode are set aside."""
        refused = {mid: why for mid, body, meta, _v in rows if (why := _not_text(body, meta))}
        if refused:
            self._set_aside(list(refused), list(refused.values()))
        return [row for row in rows if row[0] not in refused]

    def _set_aside(self, memory_ids: list[str], reasons: list[str]) -> None:
        with self._lexical.transaction(durable=True) as tx:  # never in Chroma: out of the keyword index too
            self._lexical.unwritten.set_aside(memory_ids, reasons)
            for mid in memory_ids:
                tx.delete(mid)
        log.error(
            "memories %s, acknowledged by an earlier release, cannot be written to Chroma (%s): set aside, kept in "
            "the keyword index's file and included in an export; every other memory is readable",
            memory_ids,
            "; ".join(reasons),
        )

    def _write(self, items: Sequence[Item], held: list[bool]) -> None:
        """The memories to Chroma, with the passages neither queued nor `held`; then the `held`
        passages into memory (`DeferredPassages.hold`)."""
        chunk_ids_, chunk_vectors, chunk_docs, chunk_meta = passage_records(items, held)
        if chunk_ids_:
            self._chunks.add(ids=chunk_ids_, embeddings=chunk_vectors, documents=chunk_docs, metadatas=chunk_meta)
        ids, whole, documents, metadatas = _records(items)
        try:
            self._memories.add(ids=ids, embeddings=whole, documents=documents, metadatas=metadatas)
        except BaseException:
            if chunk_ids_:
                self._chunks.delete(ids=chunk_ids_)
            raise
        self._passages.hold(self._rows(), items, held)

    def delete_vectors(self, memories: Sequence[tuple[str, int]]) -> None:
        """Chroma's records of these memories (id, number of passages), their passages' too."""
        self._memories.delete(ids=[mid for mid, _ in memories])
        chunks = [cid for mid, passages in memories for cid in chunk_ids(mid, passages)]
        if chunks:
            self._chunks.delete(ids=chunks)


def _not_text(body: str, meta: dict[str, Any]) -> str:
    """Why Chroma would refuse a journal row's text or metadata, or "" when it would take it."""
    try:
        text.text(body, "its text")
        for key, value in meta.items():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    text.text(item, f"its {key} field")
    except InvalidInputError as exc:
        return str(exc)
    return ""


def _records(items: Sequence[Item]) -> tuple[list[str], list[list[float]], list[str], list[dict[str, Any]]]:
    """Chroma's ids, vectors (the whole text's), documents and metadata for these memories."""
    return (
        [m.memory_id for m, _v, _w in items],
        [v[0].tolist() for _m, v, _w in items],
        [m.content for m, _v, _w in items],
        [metadata_of(m, len(w)) for m, _v, w in items],
    )
