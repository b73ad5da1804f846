"""The layers between the engine and Chroma, each a store itself: one delegating class per interface.

A store is wrapped before the engine sees it: the reset check (`symbiote.storage.data_directory.ResetGuard`)
and the file share's writer lease (`symbiote.azure.guard.GuardedStore`). Each is written once as a
`Layer[S]` for both interfaces and mixed with `StoreLayer` (or `HistoryLayer`), where every method of
the interface is written out once, as the call it makes on the store below, and sent through `_read`
or `_write`; a layer changes what those do (which store, holding what). The call is plain Python
(`store.get(memory_ids)`): a type checker and an editor follow it to the interface, no name is
looked up. That choice is the one place a method is classed as a read or a write (no list elsewhere
repeats it): a method added to `MemoryStore` is added here, and a write reaches the store only
through a layer's `_write` (tests/storage/test_layers.py learns each method's class from here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Generic, TypeVar

from symbiote.storage.base import HistoryStore, MemoryStore, StoredMemory, StoredTurn, TrashedMemory

if TYPE_CHECKING:
    import numpy as np

    from symbiote.storage.base import KeywordMatch, Match
    from symbiote.storage.filters import MemoryFilter
    from symbiote.storage.fusion import Candidate, Fusion

T = TypeVar("T")
S = TypeVar("S", MemoryStore, HistoryStore)  # the interface a layer wraps


class Layer(Generic[S]):
    """A store over another one, whichever interface: reads go through `_read`, writes through
    `_write`. A guard or a proxy is written once as a `Layer[S]` and serves both interfaces."""

    def _target(self) -> S:
        """The store this layer passes calls to."""
        raise NotImplementedError

    def _read(self, call: Callable[[S], T]) -> T:
        """Every read passes here, as the call it makes on the store below: a layer that checks
        reads overrides it."""
        return call(self._target())

    def _write(self, call: Callable[[S], T]) -> T:
        """Every write passes here: the writer lease's guard overrides it, so no write slips past."""
        return call(self._target())

    def writing(self) -> AbstractContextManager[None]:
        return self._target().writing()

    def close(self) -> None:
        self._target().close()


class StoreLayer(Layer[MemoryStore]):
    """A `MemoryStore` over another one: every method of the interface, written out once."""

    def idle_step(self) -> bool:
        return self._read(lambda store: store.idle_step())

    # Writes.
    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None:
        self._write(lambda store: store.add(memory, vectors, windows))

    def add_many(self, items: Sequence[tuple[StoredMemory, np.ndarray, Sequence[str]]]) -> None:
        self._write(lambda store: store.add_many(items))

    def store_new(
        self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str], near: int
    ) -> tuple[StoredMemory | None, list[tuple[StoredMemory, float]]]:
        return self._write(lambda store: store.store_new(memory, vectors, windows, near))

    def add_passages(self, items: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> int:
        return self._write(lambda store: store.add_passages(items))

    def replace(self, memory: StoredMemory, vectors: np.ndarray | None, windows: Sequence[str]) -> None:
        self._write(lambda store: store.replace(memory, vectors, windows))

    def set_links(self, memories: Sequence[StoredMemory]) -> None:
        self._write(lambda store: store.set_links(memories))

    def delete(self, memory_id: str) -> bool:
        return self._write(lambda store: store.delete(memory_id))

    def delete_many(self, memory_ids: Sequence[str]) -> list[str]:
        return self._write(lambda store: store.delete_many(memory_ids))

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        return self._write(lambda store: store.trash(memory_ids, deleted_by, deleted_us))

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        return self._write(lambda store: store.restore(memory_ids))

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        return self._write(lambda store: store.purge(memory_ids))

    # Reads.
    def pending_passages(self, limit: int) -> list[tuple[str, list[str] | None, str]]:
        return self._read(lambda store: store.pending_passages(limit))

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]:
        return self._read(lambda store: store.get(memory_ids))

    def find_content(self, content_hash: str) -> StoredMemory | None:
        return self._read(lambda store: store.find_content(content_hash))

    def find_contents(self, hashes: Sequence[str]) -> dict[str, StoredMemory]:
        return self._read(lambda store: store.find_contents(hashes))

    def counts(self) -> dict[str, int]:
        return self._read(lambda store: store.counts())

    def nearest(
        self, vector: np.ndarray, k: int, where: MemoryFilter | None = None, passages: bool = True
    ) -> list[Match]:
        return self._read(lambda store: store.nearest(vector, k, where, passages))

    def keyword(self, text: str, k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        return self._read(lambda store: store.keyword(text, k, where))

    def keyword_words(self, words: Sequence[str], k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        return self._read(lambda store: store.keyword_words(words, k, where))

    def search(
        self,
        vector: np.ndarray,
        text: str,
        k: int,
        topic_words: Sequence[str],
        topic_k: int,
        where: MemoryFilter | None,
        fusion: Fusion,
    ) -> tuple[list[Candidate], dict[str, StoredMemory]]:
        return self._read(lambda store: store.search(vector, text, k, topic_words, topic_k, where, fusion))

    def count(self) -> int:
        return self._read(lambda store: store.count())

    def count_from(self, conversation_id: str, since_us: int) -> int:
        return self._read(lambda store: store.count_from(conversation_id, since_us))

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]:
        return self._read(lambda store: store.page(limit, before_us))

    def scan(self, where: MemoryFilter | None = None) -> list[StoredMemory]:
        return self._read(lambda store: store.scan(where))

    def size_bytes(self) -> int:
        return self._read(lambda store: store.size_bytes())

    def browse(self, where: MemoryFilter | None, offset: int, limit: int) -> tuple[list[StoredMemory], int]:
        return self._read(lambda store: store.browse(where, offset, limit))

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._read(lambda store: store.vectors(memory_ids))

    def trashed(
        self, offset: int, limit: int, memory_ids: Sequence[str] | None = None
    ) -> tuple[list[TrashedMemory], int]:
        return self._read(lambda store: store.trashed(offset, limit, memory_ids))

    def set_aside(self) -> list[tuple[StoredMemory, str]]:
        return self._read(lambda store: store.set_aside())


class HistoryLayer(Layer[HistoryStore]):
    """A `HistoryStore` over another one, as `StoreLayer` is a `MemoryStore`'s."""

    def idle_step(self) -> bool:
        return self._read(lambda store: store.idle_step())

    def add(
        self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: np.ndarray, index: int | None
    ) -> tuple[StoredTurn, bool]:
        return self._write(lambda store: store.add(conversation, role, text, ts, ts_us, vector, index))

    def delete_conversation(self, conversation: str) -> int:
        return self._write(lambda store: store.delete_conversation(conversation))

    def get_turns(self, conversation: str, n: int) -> tuple[list[StoredTurn], int]:
        return self._read(lambda store: store.get_turns(conversation, n))

    def search(self, vector: np.ndarray, k: int, conversation: str | None) -> list[tuple[StoredTurn, float]]:
        return self._read(lambda store: store.search(vector, k, conversation))

    def count(self) -> int:
        return self._read(lambda store: store.count())

    def page_turns(self, offset: int, limit: int) -> list[StoredTurn]:
        return self._read(lambda store: store.page_turns(offset, limit))

    def conversations(self) -> list[tuple[str, int, str]]:
        return self._read(lambda store: store.conversations())
