"""Where memories live: the small synchronous interface the engine talks to, and how to open it.

The engine sees only `MemoryStore`; `symbiote.chroma_store.ChromaMemoryStore` implements it
over any Chroma client (embedded `PersistentClient` today, a Chroma server's `HttpClient` as
the way past one machine). Calls block; the engine runs them in worker threads.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

from symbiote.errors import StoreUnavailableError

if TYPE_CHECKING:
    import numpy as np

    from symbiote.chroma_client import ChromaServer
    from symbiote.chroma_store import ChromaMemoryStore
    from symbiote.lexical import KeywordMatch

LEXICAL_FILE = "symbiote_keywords.sqlite3"


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


@dataclass(frozen=True)
class Match:
    memory_id: str
    similarity: float  # cosine similarity of the memory's best-matching passage, -1..1


class MemoryStore(Protocol):
    """The storage operations the engine needs; nothing Chroma-specific leaks through."""

    def add(self, memory: StoredMemory, vectors: "np.ndarray", windows: Sequence[str]) -> None: ...

    def get(self, memory_ids: Sequence[str]) -> dict[str, StoredMemory]: ...

    def find_content(self, content_hash: str) -> StoredMemory | None: ...

    def nearest(
        self, vector: "np.ndarray", k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list[Match]: ...

    def keyword(
        self, text: str, k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list["KeywordMatch"]: ...

    def keyword_words(
        self, words: Sequence[str], k: int, after_us: int | None = None, before_us: int | None = None
    ) -> list["KeywordMatch"]: ...

    def coverage(self, text: str, memory_ids: Sequence[str]) -> dict[str, float]: ...

    def delete(self, memory_id: str) -> bool: ...

    def count(self) -> int: ...

    def page(self, limit: int, before_us: int | None) -> list[StoredMemory]: ...

    def scan(self) -> list[StoredMemory]: ...

    def size_bytes(self) -> int: ...


def open_embedded_store(path: Path, model_name: str, dimension: int) -> "ChromaMemoryStore":
    """Open (creating if needed) the embedded Chroma store and its keyword index at `path`."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".symbiote-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StoreUnavailableError(
            f"The memory store directory {str(path)!r} is not writable ({exc.strerror or exc}). "
            "Fix its permissions or set CHROMADB_PATH to a writable directory."
        ) from exc
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    from symbiote.chroma_store import ChromaMemoryStore
    from symbiote.lexical import LexicalIndex

    client = chromadb.PersistentClient(
        path=str(path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    )
    return ChromaMemoryStore(client, model_name, dimension, LexicalIndex(path / LEXICAL_FILE), data_path=path)


def open_server_store(server: "ChromaServer", index_dir: Path, model_name: str, dimension: int) -> "ChromaMemoryStore":
    """Open the store on a Chroma server (CHROMA_HOST); the keyword index stays local, in `index_dir`.

    Same store class, collections and behaviour as the embedded store; only the client differs.
    `symbiote.chroma_client.ServerMemoryStore` keeps the local keyword index in step with the server.
    """
    from symbiote.chroma_client import ServerMemoryStore, connect_server
    from symbiote.lexical import LexicalIndex

    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailableError(
            f"The directory {str(index_dir)!r} for the local keyword index cannot be created "
            f"({exc.strerror or exc}). Set CHROMADB_PATH to a writable directory."
        ) from exc
    client = connect_server(server)
    return ServerMemoryStore(client, model_name, dimension, LexicalIndex(index_dir / LEXICAL_FILE), data_path=None)
