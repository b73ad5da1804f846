"""The stores living in the store's process (`symbiote.storage.chroma.process`), as the server uses them.

Each method of the interface is written out with its types and sent as a call of the interface's
method (`MemoryStore.get`, its arguments checked against it: ParamSpec); only its name and the
arguments cross the socket, pickled, and the child calls that method of the store it hosts (it
refuses a name the interface does not have). Writes hold nothing here: a guard above (the file
share's writer lease) holds what a write needs; the child does its idle work between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Concatenate, Generic, ParamSpec, TypeVar

from symbiote.storage.base import HistoryStore, MemoryStore, StoredMemory, StoredTurn, TrashedMemory

if TYPE_CHECKING:
    import numpy as np

    from symbiote.storage.base import KeywordMatch, Match
    from symbiote.storage.chroma.process import StoreProcess
    from symbiote.storage.filters import MemoryFilter
    from symbiote.storage.fusion import Candidate, Fusion

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", MemoryStore, HistoryStore)


class _Remote(Generic[S]):
    """A store object living in the child, by its handle."""

    def __init__(self, host: StoreProcess, handle: int) -> None:
        self._host = host
        self._handle = handle

    def _call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Call the interface's method `op` on the store in the child and return what it returns."""
        result: T = self._host.call(self._handle, op.__name__, args, kwargs)
        return result

    def writing(self) -> AbstractContextManager[None]:
        return nullcontext()

    def close(self) -> None:
        """Close this store's Chroma client in the child (e.g. to reopen it after a new writer took over)."""
        self._host.forget(self._handle)


class RemoteStore(_Remote[MemoryStore]):
    """The memory store living in the child."""

    def idle_step(self) -> bool:
        return self._call(MemoryStore.idle_step)

    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None:
        self._call(MemoryStore.add, memory, vectors, windows)

    def add_many(self, items: Sequence[tuple[StoredMemory, np.ndarray, Sequence[str]]]) -> None:
        self._call(MemoryStore.add_many, items)

    def store_new(
        self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str], near: int
    ) -> tuple[StoredMemory | None, list[tuple[StoredMemory, float]]]:
        return self._call(MemoryStore.store_new, memory, vectors, windows, near)

    def add_passages(self, items: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> int:
        return self._call(MemoryStore.add_passages, items)

    def replace(self, memory: StoredMemory, vectors: np.ndarray | None, windows: Sequence[str]) -> None:
        self._call(MemoryStore.replace, memory, vectors, windows)

    def set_links(self, memories: Sequence[StoredMemory]) -> None:
        self._call(MemoryStore.set_links, memories)

    def delete(self, memory_id: str) -> bool:
        return self._call(MemoryStore.delete, memory_id)

    def delete_many(self, memory_ids: Sequence[str]) -> list[str]:
        return self._call(MemoryStore.delete_many, memory_ids)

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        return self._call(MemoryStore.trash, memory_ids, deleted_by, deleted_us)

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        return self._call(MemoryStore.restore, memory_ids)

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        return self._call(MemoryStore.purge, memory_ids)

    def pending_passages(self, limit: int) -> list[tuple[str, list[str] | None, str]]:
        return self._call(MemoryStore.pending_passages, limit)

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]:
        return self._call(MemoryStore.get, memory_ids)

    def find_content(self, content_hash: str) -> StoredMemory | None:
        return self._call(MemoryStore.find_content, content_hash)

    def find_contents(self, hashes: Sequence[str]) -> dict[str, StoredMemory]:
        return self._call(MemoryStore.find_contents, hashes)

    def counts(self) -> dict[str, int]:
        return self._call(MemoryStore.counts)

    def nearest(
        self, vector: np.ndarray, k: int, where: MemoryFilter | None = None, passages: bool = True
    ) -> list[Match]:
        return self._call(MemoryStore.nearest, vector, k, where, passages)

    def keyword(self, text: str, k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        return self._call(MemoryStore.keyword, text, k, where)

    def keyword_words(self, words: Sequence[str], k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]:
        return self._call(MemoryStore.keyword_words, words, k, where)

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
        return self._call(MemoryStore.search, vector, text, k, topic_words, topic_k, where, fusion)

    def count(self) -> int:
        return self._call(MemoryStore.count)

    def count_from(self, conversation_id: str, since_us: int) -> int:
        return self._call(MemoryStore.count_from, conversation_id, since_us)

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]:
        return self._call(MemoryStore.page, limit, before_us)

    def scan(self, where: MemoryFilter | None = None) -> list[StoredMemory]:
        return self._call(MemoryStore.scan, where)

    def size_bytes(self) -> int:
        return self._call(MemoryStore.size_bytes)

    def browse(self, where: MemoryFilter | None, offset: int, limit: int) -> tuple[list[StoredMemory], int]:
        return self._call(MemoryStore.browse, where, offset, limit)

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._call(MemoryStore.vectors, memory_ids)

    def trashed(
        self, offset: int, limit: int, memory_ids: Sequence[str] | None = None
    ) -> tuple[list[TrashedMemory], int]:
        return self._call(MemoryStore.trashed, offset, limit, memory_ids)

    def set_aside(self) -> list[tuple[StoredMemory, str]]:
        return self._call(MemoryStore.set_aside)


class RemoteHistory(_Remote[HistoryStore]):
    """The conversation history's store living in the child."""

    def idle_step(self) -> bool:
        return self._call(HistoryStore.idle_step)

    def add(
        self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: np.ndarray, index: int | None
    ) -> tuple[StoredTurn, bool]:
        return self._call(HistoryStore.add, conversation, role, text, ts, ts_us, vector, index)

    def delete_conversation(self, conversation: str) -> int:
        return self._call(HistoryStore.delete_conversation, conversation)

    def get_turns(self, conversation: str, n: int) -> tuple[list[StoredTurn], int]:
        return self._call(HistoryStore.get_turns, conversation, n)

    def search(self, vector: np.ndarray, k: int, conversation: str | None) -> list[tuple[StoredTurn, float]]:
        return self._call(HistoryStore.search, vector, k, conversation)

    def count(self) -> int:
        return self._call(HistoryStore.count)

    def page_turns(self, offset: int, limit: int) -> list[StoredTurn]:
        return self._call(HistoryStore.page_turns, offset, limit)

    def conversations(self) -> list[tuple[str, int, str]]:
        return self._call(HistoryStore.conversations)
