"""Every vector of the embedded store held in memory too, searched exactly with numpy, and the
records read last held beside them.

A Chroma query or read costs more in its own handling than the work it does, and a search makes
three (whole texts, passages, the likely results' contents). Chroma stays the record: each
collection is wrapped (`MirroredCollection`) so that every write reaching it reaches the rows as
well, and forgets the records it touched; the rows are read from Chroma after the store opens, a
page at a time while its process has nothing else to do (`VectorIndex.load_step`). Until every
page is read, and for a filter on tags, type or confidence, searches ask Chroma. Exact search
finds what HNSW finds, and what it misses. The rows also know every memory's content hash, so a
store of new text need not ask Chroma for a duplicate.

Exact search reads every row, so its time grows with the store while HNSW's hardly does: past
`EXACT_ROWS` rows a collection's copy is dropped and Chroma answers for it (docs/performance.md).

Only for a store with one writer, which sees every write: the embedded store in its own process.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from symbiote.storage.chroma.bulk_reads import chunk_ids

log = logging.getLogger(__name__)

PAGE = 1_000  # records read from Chroma per step: the step a request may wait behind
EXACT_ROWS = 20_000  # rows a collection's copy may hold; past them HNSW is the quicker
RECORDS = 10_000  # documents and metadata held of the records read last (a search reads its likely results)
LOAD_ATTEMPTS = 3  # reads of the whole store before giving up (a delete between pages may skip a row)


class VectorRows:
    """One collection's vectors as the rows of a matrix, with the memory and creation time of each.

    A passage's record id is "<memory id>#<n>", so `passages` rows belong to the memory its id names.
    """

    def __init__(self, dimension: int, passages: bool, limit: int | None = None) -> None:
        self._dimension = dimension
        self.passages = passages
        self.limit = EXACT_ROWS if limit is None else limit
        self.dropped = False  # grown past `limit`: no longer held, searched in Chroma
        self._lock = threading.Lock()
        self._matrix = np.empty((0, dimension), dtype=np.float32)
        self._created = np.empty(0, dtype=np.int64)
        self._ids: list[str] = []
        self._owners: list[str] = []
        self._row: dict[str, int] = {}
        self._hash_of: dict[str, str] = {}  # record id -> the content hash in its metadata, where it has one
        self._hashes: dict[str, int] = {}  # content hash -> records carrying it

    def __len__(self) -> int:
        return len(self._ids)

    def put(self, ids: Sequence[str], vectors: Any, metadatas: Sequence[dict[str, Any] | None] | None) -> None:
        """Add rows, or overwrite the rows with these ids (unit length: a dot product is the cosine)."""
        raw = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self._dimension)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        block = (raw / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)
        metas = metadatas or [None] * len(ids)
        with self._lock:
            if self.dropped:
                return
            for rid, vector, meta in zip(ids, block, metas):
                row = self._row.get(rid)
                if row is None:
                    row = self._append(rid)
                self._matrix[row] = vector
                self._created[row] = int((meta or {}).get("created_us", 0) or 0)
                self._note_hash(rid, meta)
            if len(self._ids) > self.limit:
                self._drop()

    def drop(self) -> None:
        """Stop holding these vectors (the collection outgrew exact search); frees their memory."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        self.dropped = True
        self._clear()

    def set_created(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any] | None]) -> None:
        """A metadata-only update: the creation time is the one thing the rows keep of it."""
        with self._lock:
            for rid, meta in zip(ids, metadatas):
                row = self._row.get(rid)
                if row is not None and (meta or {}).get("created_us") is not None:
                    self._created[row] = int(meta["created_us"])  # type: ignore[index]
                if row is not None:
                    self._note_hash(rid, meta)

    def _note_hash(self, rid: str, meta: dict[str, Any] | None) -> None:
        digest = (meta or {}).get("content_hash")
        if digest:
            self._forget_hash(rid)
            self._hash_of[rid] = str(digest)
            self._hashes[str(digest)] = self._hashes.get(str(digest), 0) + 1

    def _forget_hash(self, rid: str) -> None:
        digest = self._hash_of.pop(rid, None)
        if digest is not None:
            left = self._hashes[digest] - 1
            if left:
                self._hashes[digest] = left
            else:
                del self._hashes[digest]

    def holds_content(self, content_hash: str) -> bool:
        """Whether a record carries this content hash: a store of new text need not ask Chroma."""
        with self._lock:
            return content_hash in self._hashes

    def _append(self, rid: str) -> int:
        row = len(self._ids)
        if row == len(self._matrix):
            grown = max(1024, row + row // 2)
            matrix = np.empty((grown, self._dimension), dtype=np.float32)
            matrix[:row] = self._matrix[:row]
            created = np.empty(grown, dtype=np.int64)
            created[:row] = self._created[:row]
            self._matrix, self._created = matrix, created
        self._ids.append(rid)
        self._owners.append(rid.rsplit("#", 1)[0] if self.passages else rid)
        self._row[rid] = row
        return row

    def remove(self, ids: Sequence[str]) -> None:
        """Drop these rows (ids without a row are ignored); the last row moves into each gap."""
        with self._lock:
            for rid in ids:
                row = self._row.pop(rid, None)
                if row is None:
                    continue
                self._forget_hash(rid)
                last = len(self._ids) - 1
                if row != last:
                    moved = self._ids[last]
                    self._matrix[row] = self._matrix[last]
                    self._created[row] = self._created[last]
                    self._ids[row] = moved
                    self._owners[row] = self._owners[last]
                    self._row[moved] = row
                self._ids.pop()
                self._owners.pop()

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        self._matrix = np.empty((0, self._dimension), dtype=np.float32)
        self._created = np.empty(0, dtype=np.int64)
        self._ids, self._owners, self._row = [], [], {}
        self._hash_of, self._hashes = {}, {}

    def held(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The rows of these record ids that are held (copies, unit length)."""
        with self._lock:
            return {rid: self._matrix[row].copy() for rid in ids if (row := self._row.get(rid)) is not None}

    def nearest(
        self, vector: np.ndarray, k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list[tuple[str, float]]:
        """The `k` rows closest to `vector` (created in [after_us, before_us)): (memory id, cosine), best first."""
        query = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm
        with self._lock:
            count = len(self._ids)
            if count == 0 or k <= 0:
                return []
            scores = self._matrix[:count] @ query
            if after_us is not None or before_us is not None:
                created = self._created[:count]
                allowed = np.ones(count, dtype=bool)
                if after_us is not None:
                    allowed &= created >= after_us
                if before_us is not None:
                    allowed &= created < before_us
                scores = np.where(allowed, scores, -np.inf)
                count = int(allowed.sum())
            take = min(k, count)
            if take == 0:
                return []
            best = np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.arange(len(scores))
            best = best[np.argsort(-scores[best], kind="stable")]
            return [(self._owners[row], float(scores[row])) for row in best if scores[row] > -np.inf]


class MirroredCollection:
    """A Chroma collection whose writes also reach its `VectorRows`, with the records read last
    held too (each write forgets the ones it changes); everything else is Chroma's."""

    def __init__(self, collection: Any, rows: VectorRows) -> None:
        self._collection = collection
        self.rows = rows
        self._lock = threading.Lock()
        self._records: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._writes = 0  # a read that a write overtook holds nothing it read
        self._links: dict[str, dict[str, Any]] = {}  # link fields whose write waits (`additions`), shown on reads

    @property
    def held(self) -> bool:
        """Whether searches of this collection may use its rows (once the index is ready)."""
        return not self.rows.dropped

    def records(self, ids: Sequence[str]) -> dict[str, tuple[str | None, dict[str, Any] | None]]:
        """The document and metadata of each of these records that exists."""
        with self._lock:
            found = {rid: self._records[rid] for rid in ids if rid in self._records}
            for rid in found:
                self._records.move_to_end(rid)
            writes = self._writes
        missing = [rid for rid in dict.fromkeys(ids) if rid not in found]
        if missing:
            got = self._collection.get(ids=missing, include=["documents", "metadatas"])
            fresh = {
                rid: (doc, meta) for rid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
            }
            with self._lock:
                if writes == self._writes:
                    self._hold(fresh)
            found.update(fresh)
        with self._lock:
            links = {rid: self._links[rid] for rid in found if rid in self._links}
        for rid, fields in links.items():
            document, meta = found[rid]
            found[rid] = (document, {**(meta or {}), **fields})
        return found

    def relink(self, links: dict[str, dict[str, Any]]) -> None:
        """Link fields (`codec.link_metadata`) whose Chroma write waits: shown over the records read
        until an `update` of those records writes them."""
        with self._lock:
            self._links.update(links)

    def _written_links(self, ids: Sequence[str]) -> None:
        """An update or delete of these records landed: their waiting link fields are Chroma's now, or gone."""
        with self._lock:
            for rid in ids:
                self._links.pop(rid, None)

    def hold(self, ids: Sequence[str], documents: Sequence[Any] | None, metadatas: Sequence[Any] | None) -> None:
        """Hold these memories' records as Chroma has them (read in a page, or just added): a search
        reads its likely results', and each one not held costs a query into Chroma."""
        if documents is not None and metadatas is not None and not self.rows.passages:
            with self._lock:
                self._hold(
                    {rid: (doc, dict(meta) if meta else meta) for rid, doc, meta in zip(ids, documents, metadatas)}
                )

    def _hold(self, records: dict[str, tuple[Any, Any]]) -> None:
        """Under the lock: the newest RECORDS records stay."""
        self._records.update(records)
        while len(self._records) > RECORDS:
            self._records.popitem(last=False)

    def add(self, ids: Sequence[str], embeddings: Any, **fields: Any) -> None:
        with self._writing(ids):
            self._collection.add(ids=ids, embeddings=embeddings, **fields)
        self.rows.put(ids, embeddings, fields.get("metadatas"))
        self.hold(ids, fields.get("documents"), fields.get("metadatas"))

    def upsert(self, ids: Sequence[str], embeddings: Any, **fields: Any) -> None:
        with self._writing(ids):
            self._collection.upsert(ids=ids, embeddings=embeddings, **fields)
        self.rows.put(ids, embeddings, fields.get("metadatas"))

    def update(self, ids: Sequence[str], embeddings: Any = None, **fields: Any) -> None:
        with self._writing(ids):
            if embeddings is None:
                self._collection.update(ids=ids, **fields)
            else:
                self._collection.update(ids=ids, embeddings=embeddings, **fields)
        self._written_links(ids)
        if embeddings is not None:
            self.rows.put(ids, embeddings, fields.get("metadatas"))
        elif fields.get("metadatas") is not None:
            self.rows.set_created(ids, fields["metadatas"])

    def delete(self, ids: Sequence[str]) -> None:
        with self._writing(ids):
            self._collection.delete(ids=ids)
        self._written_links(ids)
        self.rows.remove(ids)

    @contextlib.contextmanager
    def _writing(self, ids: Sequence[str]) -> Iterator[None]:
        """A write to Chroma, after which (landed or not) the records it touched are read afresh."""
        try:
            yield
        finally:
            with self._lock:
                self._writes += 1
                for rid in ids:
                    self._records.pop(rid, None)

    # The reads the store makes of a collection, as Chroma's own.
    def get(self, **query: Any) -> Any:
        return self._collection.get(**query)

    def query(self, **query: Any) -> Any:
        return self._collection.query(**query)

    def count(self) -> int:
        return int(self._collection.count())


class VectorIndex:
    """The rows of both collections (whole texts, passages) and the reading of them from Chroma."""

    def __init__(self, memories: MirroredCollection, passages: MirroredCollection) -> None:
        self.whole = memories.rows
        self.passages = passages.rows
        self._sources = [memories, passages]
        self._source = 0
        self._offset = 0
        self._attempts = 1
        self.ready = False
        if memories.count() == 0:  # a new store: nothing to read in, ready for its first store at once
            while self.load_step():
                pass

    def stored(self, windows: Mapping[str, int]) -> dict[str, np.ndarray]:
        """Each memory's stored vectors as held here (`windows`: memory id -> its passages, the whole
        text's counted): the whole text's, then its passages' in order. What `MemoryStore.vectors`
        reads from Chroma at unit length, row for row, without a query: the rows mirror every write.
        Empty until every row is read in, and once either collection outgrew its copy."""
        if not self.ready or self.whole.dropped or self.passages.dropped:
            return {}
        wholes = self.whole.held(list(windows))
        passages = {mid: chunk_ids(mid, count) for mid, count in windows.items() if mid in wholes}
        parts = self.passages.held([rid for rids in passages.values() for rid in rids])
        return {
            mid: np.vstack([wholes[mid], *(parts[r] for r in rids if r in parts)]) for mid, rids in passages.items()
        }

    def load_step(self) -> bool:
        """Read the next page of vectors from Chroma; True while there is more to read."""
        if self.ready or self._attempts > LOAD_ATTEMPTS:
            return False
        source = self._sources[self._source]
        if self._offset == 0 and source.count() > source.rows.limit:
            source.rows.drop()
        if source.rows.dropped:
            return self._next_source()
        fields = ["embeddings", "metadatas"] if source.rows.passages else ["embeddings", "metadatas", "documents"]
        got = source.get(include=fields, limit=PAGE, offset=self._offset)
        if len(got["ids"]):
            source.rows.put(got["ids"], got["embeddings"], got["metadatas"])
            source.hold(got["ids"], got.get("documents"), got["metadatas"])
        self._offset += PAGE
        if len(got["ids"]) == PAGE and not source.rows.dropped:
            return True
        return self._next_source()

    def _next_source(self) -> bool:
        self._source, self._offset = self._source + 1, 0
        if self._source < len(self._sources):
            return True
        return self._finish()

    def _finish(self) -> bool:
        """Check the rows against Chroma's counts; read everything again if a row was skipped."""
        counts = [(len(source.rows), int(source.count())) for source in self._sources if not source.rows.dropped]
        if all(held == stored for held, stored in counts):
            self.ready = True
            log.debug("vectors in memory: %s", counts)
            return False
        log.warning("vectors read into memory disagree with the store (%s); reading them again", counts)
        for source in self._sources:
            source.rows.clear()
        self._source, self._offset = 0, 0
        self._attempts += 1
        if self._attempts > LOAD_ATTEMPTS:
            log.warning("vectors stay in Chroma only: %d reads disagreed with the store", LOAD_ATTEMPTS)
            return False
        return True
