"""The trash: deleted memories kept in a Chroma collection of their own until restored or purged.

A deleted memory leaves the memories' collection, its passages and the keyword index at once, so
no search, read or count sees it; its record (text, metadata, the whole text's vector) moves to
`venom_memories_trash` with when and by whom it was deleted. Restoring adds it back under its own
id with that vector and queues its passages, which are embedded again as after any store. The
collection is created by the first delete, so a store nobody deleted from is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from symbiote.storage._chroma_records import memory_from, metadata_of
from symbiote.storage.base import StoredMemory, TrashedMemory
from symbiote.storage.bulk_reads import read_all

if TYPE_CHECKING:
    from symbiote.storage.keywords import LexicalIndex

TRASH_COLLECTION = "venom_memories_trash"
TRASH_KEYS = ("deleted_us", "deleted_by")  # what the trash adds to a memory's metadata


class Trash:
    """Mixed into `ChromaMemoryStore`: moving memories to the trash, back, and out for good."""

    _client: Any
    _memories: Any
    _lexical: LexicalIndex
    _identity: dict[str, Any]
    _trash_records: Any = None  # the trash's collection, once it exists

    delete_many: Callable[[Sequence[str]], list[str]]  # the store's own

    def _trash_collection(self, create: bool) -> Any:
        """The trash's collection; None while it does not exist and `create` is False."""
        if self._trash_records is None:
            names = {c.name for c in self._client.list_collections()}
            if TRASH_COLLECTION in names or create:
                self._trash_records = self._client.get_or_create_collection(
                    TRASH_COLLECTION,
                    metadata=self._identity,
                    configuration={"hnsw": {"space": "cosine"}},
                    embedding_function=None,
                )
        return self._trash_records

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        if not memory_ids:
            return []
        got = self._memories.get(ids=list(memory_ids), include=["embeddings", "documents", "metadatas"])
        if not got["ids"]:
            return []
        trash = self._trash_collection(create=True)
        metas = [{**(meta or {}), "deleted_us": deleted_us, "deleted_by": deleted_by} for meta in got["metadatas"]]
        trash.upsert(ids=list(got["ids"]), embeddings=got["embeddings"], documents=got["documents"], metadatas=metas)
        try:
            return self.delete_many(list(got["ids"]))
        except BaseException:  # still stored: the trash must not hold a second copy
            trash.delete(ids=list(got["ids"]))
            raise

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        trash = self._trash_collection(create=False)
        if trash is None or not memory_ids:
            return []
        got = trash.get(ids=list(memory_ids), include=["embeddings", "documents", "metadatas"])
        if not got["ids"]:
            return []
        memories: list[tuple[StoredMemory, int]] = []
        for mid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
            plain = {key: value for key, value in (meta or {}).items() if key not in TRASH_KEYS}
            memories.append((memory_from(mid, doc, plain), int(plain.get("windows", 1) or 1)))
        written = False
        try:
            with self._lexical.transaction() as tx:
                for memory, passages in memories:
                    tx.add(memory.memory_id, memory.created_us, memory.content)
                    if passages > 1:
                        tx.queue_passages(memory.memory_id, None)  # embedded again, as after a store
                self._memories.add(
                    ids=[m.memory_id for m, _ in memories],
                    embeddings=got["embeddings"],
                    documents=[m.content for m, _ in memories],
                    metadatas=[metadata_of(m, passages) for m, passages in memories],
                )
                written = True
        except BaseException:
            if written:  # the index commit failed after Chroma took the write: undo it
                self._memories.delete(ids=[m.memory_id for m, _ in memories])
            raise
        trash.delete(ids=list(got["ids"]))
        return list(got["ids"])

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        trash = self._trash_collection(create=False)
        if trash is None or not memory_ids:
            return []
        present = list(trash.get(ids=list(memory_ids), include=[])["ids"])
        if present:
            trash.delete(ids=present)
        return present

    def trashed(self, offset: int, limit: int) -> tuple[list[TrashedMemory], int]:
        trash = self._trash_collection(create=False)
        if trash is None:
            return [], 0
        heads = read_all(trash, ["metadatas"])
        order = sorted(
            zip(heads["ids"], heads["metadatas"]),
            key=lambda pair: (int((pair[1] or {}).get("deleted_us", 0)), pair[0]),
            reverse=True,
        )
        wanted = [mid for mid, _ in order[offset : offset + limit]]
        if not wanted:
            return [], len(order)
        got = trash.get(ids=wanted, include=["documents", "metadatas"])
        found = {mid: (doc, meta or {}) for mid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])}
        page = [
            TrashedMemory(
                memory=memory_from(mid, found[mid][0], found[mid][1]),
                deleted_us=int(found[mid][1].get("deleted_us", 0)),
                deleted_by=str(found[mid][1].get("deleted_by", "")),
            )
            for mid in wanted
            if mid in found
        ]
        return page, len(order)
