"""The small synchronous interface the engine talks to, the records that cross it, and how it calls.

The interface is written once, here: `MemoryStore` and `HistoryStore`.
`symbiote.storage.chroma.store.ChromaMemoryStore` implements the first over any Chroma client
(the embedded store's, over Chroma's Rust core, or a Chroma server's `HttpClient` as the way past
one machine). Calls
block; the engine runs them in worker threads (`symbiote.memory.store_io`).

The engine reaches a store through a `Reach`: every call as the interface's own method and its
arguments, `reach.call(MemoryStore.get, ids)` (ParamSpec-checked: a type checker follows it to the
interface, an editor to its implementation). What every call needs is said once where every call
passes, a `Reach`'s `call`: the store in this process (`Local`), in the store process
(`symbiote.storage.chroma.process.Remote`), behind the reset check
(`symbiote.storage.data_directory.ResetGuard`) or the file share's writer lease
(`symbiote.azure.guard.LeaseGuard`). Which calls are writes is one table, `WRITES`. Opening a
store is `symbiote.storage.chroma.opening`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, Final, Generic, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from symbiote.storage.filters import MemoryFilter
    from symbiote.storage.fusion import Candidate, Fusion

# The side database (`symbiote.storage.chroma.side_database`) holds the journal and the trash too, but its
# file keeps the name it had when it held only the keyword index: existing data directories use it.
SIDE_DATABASE_FILE = "symbiote_keywords.sqlite3"
CHROMA_FILE = "chroma.sqlite3"  # an embedded Chroma store exists once this file does


def content_hash(content: str) -> str:
    """Identity of a memory's text for duplicate detection: case and spacing do not count."""
    normalised = re.sub(r"\s+", " ", content.strip()).casefold()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class StoredMemory:
    """A memory as the store holds it (no vector)."""

    memory_id: str
    content: str
    timestamp: str
    created_us: int
    tags: tuple[str, ...]
    content_hash: str = ""
    type: str | None = None
    confidence: float | None = None
    bookmarked: bool = False
    updated_us: int | None = None
    conversation_id: str | None = None
    # A link the server made between two memories about the same thing (symbiote.memory.links):
    # the one to show first names the other in `supersedes`, the other names it in `superseded_by`;
    # both carry its kind ("update" or "duplicate"); `link_kept` once the owner reviewed it;
    # `link_by`, on the one replaced, who made it: None for the server's rule, "assistant", "owner".
    supersedes: str | None = None
    superseded_by: str | None = None
    link_kind: str | None = None
    link_kept: bool = False
    link_by: str | None = None
    edits: int = 0  # times changed since it was stored (kept from 2026-11-26 on; 0 before)
    client: str | None = None  # the name of what stored it: an MCP client's, "console", "import"


LINK_FIELDS = ("supersedes", "superseded_by", "link_kind", "link_kept", "link_by")


@dataclass(frozen=True)
class TrashedMemory:
    """A deleted memory kept in the trash until it is restored or purged (its whole text's vector too)."""

    memory: StoredMemory
    deleted_us: int
    deleted_by: str  # "owner" (the console), "card" (the owner, from the memory card) or "assistant" (delete_memory)


@dataclass(frozen=True)
class Match:
    memory_id: str
    similarity: float  # cosine similarity of the memory's best-matching passage, -1..1


@dataclass(frozen=True)
class KeywordMatch:
    memory_id: str
    score: float  # BM25, higher is better


class MemoryStore(Protocol):
    """The storage operations the engine needs; nothing Chroma-specific leaks through."""

    def add(self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str]) -> None: ...

    def add_many(self, items: Sequence[tuple[StoredMemory, np.ndarray, Sequence[str]]]) -> None:
        """All or nothing. An item with fewer vectors than windows (the whole text's only) has its
        passages queued for `pending_passages` / `add_passages`."""
        ...

    def store_new(
        self, memory: StoredMemory, vectors: np.ndarray, windows: Sequence[str], near: int
    ) -> tuple[StoredMemory | None, list[tuple[StoredMemory, float]]]:
        """The memory with the same text if there is one (nothing written); else add this one and
        return the `near` closest memories (each with its cosine). One call for the whole store."""
        ...

    def set_links(self, memories: Sequence[StoredMemory]) -> None:
        """Write these memories' link fields (`LINK_FIELDS`) and nothing else, all in one go: a
        link is on both of its memories or on neither. Raises KeyError for an id not stored."""
        ...

    def pending_passages(self, limit: int) -> list[tuple[str, list[str] | None, str]]:
        """Memories whose passages are queued: (id, passages or None to work out, text)."""
        ...

    def add_passages(self, items: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> int:
        """Index queued passages (memory id, the vectors of windows[1:] or of every window, the whole
        text's first, windows); skips the stale."""
        ...

    def replace(self, memory: StoredMemory, vectors: np.ndarray | None, windows: Sequence[str]) -> None:
        """Same id, new content or metadata; `vectors` None keeps the old text and vectors."""
        ...

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]: ...

    def find_content(self, content_hash: str) -> StoredMemory | None: ...

    def find_contents(self, hashes: Sequence[str]) -> dict[str, StoredMemory]: ...

    def counts(self) -> dict[str, int]:
        """Records per collection, for statistics."""
        ...

    def nearest(
        self, vector: np.ndarray, k: int, where: MemoryFilter | None = None, passages: bool = True
    ) -> list[Match]:
        """Memories by cosine similarity of their best passage (or whole text only, without passages)."""
        ...

    def keyword(self, text: str, k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]: ...

    def keyword_words(self, words: Sequence[str], k: int, where: MemoryFilter | None = None) -> list[KeywordMatch]: ...

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
        """A search's store work in one call: `nearest`, `keyword` and (with topic words)
        `keyword_words`, fused with the caller's `fusion` (`storage.fusion`). Returns the fused
        candidates, the records of those likely shown and, with `fusion.vectors`, the stored vectors
        of those records where the store holds them in memory: `vectors` at unit length (a store
        holding none returns none, and `vectors` reads them)."""
        ...

    def delete(self, memory_id: str) -> bool: ...

    def delete_many(self, memory_ids: Sequence[str]) -> list[str]:
        """Deletes in one go; returns the ids that existed."""
        ...

    def trash(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int) -> list[str]:
        """Move memories to the trash: gone from every read above, kept with their whole text's
        vector until `restore` or `purge`. Returns the ids that existed."""
        ...

    def restore(self, memory_ids: Sequence[str]) -> list[str]:
        """Bring memories back from the trash under their own ids (passages queued to be indexed
        again). The caller checks first that no stored memory has the id or the text. Returns the ids restored."""
        ...

    def purge(self, memory_ids: Sequence[str]) -> list[str]:
        """Delete memories from the trash for good; returns the ids that were there."""
        ...

    def trashed(
        self, offset: int, limit: int, memory_ids: Sequence[str] | None = None
    ) -> tuple[list[TrashedMemory], int]:
        """A page of the trash, the most recently deleted first, and how many it holds; with
        `memory_ids`, those of them in the trash (the page ignored)."""
        ...

    def count(self) -> int: ...

    def count_from(self, conversation_id: str, since_us: int) -> int: ...

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]: ...

    def scan(self, where: MemoryFilter | None = None) -> list[StoredMemory]:
        """Every (matching) memory without its content: for statistics and retention."""
        ...

    def size_bytes(self) -> int: ...

    def browse(self, where: MemoryFilter | None, offset: int, limit: int) -> tuple[list[StoredMemory], int]:
        """A page of the (matching) memories newest first, and how many match (symbiote.storage.chroma.bulk_reads)."""
        ...

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Each memory's stored vectors, its whole text's first: for an export that keeps them."""
        ...

    def set_aside(self) -> list[tuple[StoredMemory, str]]:
        """The memories an earlier release acknowledged that Chroma refuses (set aside at open, never
        searched), each with why; text that is not Unicode shown as U+FFFD. For `/health`, the
        console and an export."""
        ...

    def losses(self) -> list[str]:
        """What an open could not recover from a damaged file it set aside (the write-behind
        journal's or the trash's rows), each a sentence naming the file and how to get the rows
        back; said until the file is removed. Empty when nothing is lost. For `/health`."""
        ...

    def idle_step(self) -> bool:
        """A step of the work done while no call waits (reading vectors into memory); True while there is more."""
        ...

    def close(self) -> None:
        """Let go of the store's client (before reopening it, or at shutdown)."""
        ...


@dataclass(frozen=True)
class StoredTurn:
    """One turn as the store holds it."""

    conversation_id: str
    turn_index: int
    role: str
    text: str
    ts: str  # ISO-8601 UTC


class HistoryStore(Protocol):
    """What the conversation history needs from storage. Its writes, `add` and `delete_conversation`
    (`WRITES`), need the writer lease where there is one; the rest only read."""

    def add(
        self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: np.ndarray, index: int | None
    ) -> tuple[StoredTurn, bool]: ...

    def delete_conversation(self, conversation: str) -> int: ...

    def get_turns(self, conversation: str, n: int, before: int | None = None) -> tuple[list[StoredTurn], int]: ...

    def search(self, vector: np.ndarray, k: int, conversation: str | None) -> list[tuple[StoredTurn, float]]: ...

    def count(self) -> int: ...

    def page_turns(self, offset: int, limit: int) -> list[StoredTurn]: ...

    def conversations(self) -> list[tuple[str, int, str]]: ...

    def idle_step(self) -> bool: ...

    def close(self) -> None: ...


# -- how the engine calls a store ---------------------------------------------------------------

S = TypeVar("S", MemoryStore, HistoryStore)  # the interface a call is of
P = ParamSpec("P")
T = TypeVar("T")

# The calls that change a store, of both interfaces by name (`add` is one of each): what needs the
# writer lease, what the store process may let wait behind its answer, what a read-only replica
# refuses. Every other method of the interfaces only reads.
WRITES: Final = frozenset(
    {
        "add",
        "add_many",
        "store_new",
        "add_passages",
        "replace",
        "set_links",
        "delete",
        "delete_many",
        "trash",
        "restore",
        "purge",
        "delete_conversation",
    }
)


def is_write(op: Callable[..., object]) -> bool:
    """Whether `op`, a method of the interface, changes the store (`WRITES`)."""
    return op.__name__ in WRITES


class Reach(Generic[S]):
    """How a call reaches a store: every call of its interface through `call`, so what every call
    needs (a check, a lease, a trip to another process) is written once, in a subclass's `call`."""

    def call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`op(store, *args, **kwargs)` on the store this reaches: `op` is the interface's method."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Local(Reach[S]):
    """The reach of a store in this process: each call made on it directly."""

    def __init__(self, store: S) -> None:
        self.store: S = store

    def call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        # The store's own method of that name: `op` itself is the interface's (a Protocol's body).
        method: Callable[P, T] = getattr(self.store, op.__name__)
        return method(*args, **kwargs)

    def close(self) -> None:
        self.store.close()
