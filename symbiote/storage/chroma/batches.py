"""Every write to a Chroma collection in batches within Chroma's maximum, asked of Chroma itself.

Chroma refuses an add, upsert or update of more records than its maximum batch (5,461 in the
embedded store, where it comes from SQLite's limit on variables; a Chroma server says its own),
and a read of more ids than SQLite takes fails too. A 100,000-byte memory has some 220 passages,
so 41 of them indexed together, or the links of 10,000 memories deleted together, went over it
and failed every time they were tried. Each collection the stores open is wrapped here once
(`BatchedCollection`), so no write path has to remember the limit.

A write cut into several batches is not atomic in Chroma: the batches before a failed one stay
written. The stores' callers already undo a failed write by id (`ChromaMemoryStore.add_many`) or
write what can be written again (passages are upserted, links set whole).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

log = logging.getLogger(__name__)

READ_IDS = 10_000  # ids per read by id: Chroma 1.5.9 fails a read of over 32,766 with metadata or text
FALLBACK_BATCH = 5_461  # the embedded Chroma's maximum, for a client that cannot say its own


def max_batch_size(client: Any) -> int:
    """Chroma's maximum batch for `client` (`get_max_batch_size`: the embedded store's bindings, or
    the server's pre-flight answer), asked once when a store opens its collections."""
    size = int(client.get_max_batch_size())
    if size <= 0:  # a server that does not say: the embedded store's limit, which no server is below
        log.warning(
            "the Chroma server gave no maximum batch size; writing at most %d records at a time", FALLBACK_BATCH
        )
        return FALLBACK_BATCH
    return size


def spans(total: int, size: int) -> Iterator[slice]:
    """Consecutive slices of at most `size` covering `total` items."""
    for start in range(0, total, size):
        yield slice(start, min(start + size, total))


def _sliced(fields: dict[str, Any], part: slice) -> dict[str, Any]:
    """Each field's slice (lists and numpy arrays alike); fields left out or None stay so."""
    return {key: value[part] if value is not None else None for key, value in fields.items()}


class BatchedCollection:
    """A Chroma collection whose add, upsert, update and delete go in batches of at most `max_batch`
    records, and whose reads by id go in pages of READ_IDS; everything else is Chroma's."""

    def __init__(self, collection: Any, max_batch: int) -> None:
        self._collection = collection
        self.max_batch = max_batch

    @property
    def name(self) -> str:
        return str(self._collection.name)

    @property
    def metadata(self) -> dict[str, Any] | None:
        meta: dict[str, Any] | None = self._collection.metadata
        return meta

    def add(self, ids: Sequence[str], embeddings: Any = None, **fields: Any) -> None:
        self._write(self._collection.add, ids, embeddings, fields)

    def upsert(self, ids: Sequence[str], embeddings: Any = None, **fields: Any) -> None:
        self._write(self._collection.upsert, ids, embeddings, fields)

    def update(self, ids: Sequence[str], embeddings: Any = None, **fields: Any) -> None:
        self._write(self._collection.update, ids, embeddings, fields)

    def delete(self, ids: Sequence[str]) -> None:
        for part in spans(len(ids), self.max_batch):
            self._collection.delete(ids=list(ids[part]))

    def _write(self, write: Any, ids: Sequence[str], embeddings: Any, fields: dict[str, Any]) -> None:
        if embeddings is not None:
            fields = {**fields, "embeddings": embeddings}
        for part in spans(len(ids), self.max_batch):
            write(ids=list(ids[part]), **_sliced(fields, part))

    def get(self, ids: Sequence[str] | None = None, **query: Any) -> Any:
        """Chroma's `get`; by more than READ_IDS ids, in pages merged into one answer."""
        if ids is None:
            return self._collection.get(**query)
        if len(ids) <= READ_IDS:
            return self._collection.get(ids=list(ids), **query)
        merged: dict[str, Any] = {}
        for part in spans(len(ids), READ_IDS):
            got = self._collection.get(ids=list(ids[part]), **query)
            for key in ("ids", *query.get("include", [])):
                value = got.get(key)
                if value is not None:
                    merged.setdefault(key, []).extend(value)
        return {"documents": None, "metadatas": None, "embeddings": None, **merged, "ids": merged.get("ids", [])}

    def query(self, **query: Any) -> Any:
        return self._collection.query(**query)

    def count(self) -> int:
        return int(self._collection.count())
