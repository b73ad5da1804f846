"""Where memories live: the store interface the engine talks to, and how a store is opened and guarded.

This is the package's door: other packages import from `symbiote.storage` (or from
`symbiote.storage.chroma`, the Chroma implementation's own door), never from a module inside it
(tests/test_layers.py checks). What is here is light to import: no Chroma, no numpy, so the
command line and the sign-in database can use it on their way to listening.
"""

from symbiote.storage import text
from symbiote.storage.base import (
    CHROMA_FILE,
    LINK_FIELDS,
    SIDE_DATABASE_FILE,
    WRITES,
    HistoryStore,
    KeywordMatch,
    Local,
    Match,
    MemoryStore,
    Reach,
    StoredMemory,
    StoredTurn,
    TrashedMemory,
    content_hash,
    is_write,
)
from symbiote.storage.data_directory import (
    ResetCheck,
    ResetGuard,
    StoreResetError,
    embedded_store_exists,
    make_private,
    quarantine,
    reset_store,
)
from symbiote.storage.data_format import FORMAT_FILE, FORMAT_VERSION, record_format, recorded_format
from symbiote.storage.disk_errors import (
    RemoteStoreError,
    StorageFullError,
    StorageReadOnlyError,
    StoreDamagedError,
    is_damage,
    is_transient,
    write_failure,
)
from symbiote.storage.diskspace import DiskSpace, directory_bytes
from symbiote.storage.filters import MemoryFilter
from symbiote.storage.fusion import Candidate, Fusion, MatchedBy, fused, likely
from symbiote.storage.terms import query_terms

__all__ = [
    "CHROMA_FILE",
    "Candidate",
    "Fusion",
    "MatchedBy",
    "fused",
    "likely",
    "FORMAT_FILE",
    "FORMAT_VERSION",
    "SIDE_DATABASE_FILE",
    "LINK_FIELDS",
    "DiskSpace",
    "HistoryStore",
    "KeywordMatch",
    "Local",
    "Match",
    "MemoryFilter",
    "MemoryStore",
    "RemoteStoreError",
    "ResetCheck",
    "ResetGuard",
    "Reach",
    "StorageFullError",
    "StorageReadOnlyError",
    "StoreDamagedError",
    "WRITES",
    "StoreResetError",
    "StoredMemory",
    "StoredTurn",
    "TrashedMemory",
    "content_hash",
    "directory_bytes",
    "embedded_store_exists",
    "is_damage",
    "is_write",
    "is_transient",
    "make_private",
    "query_terms",
    "quarantine",
    "record_format",
    "recorded_format",
    "reset_store",
    "text",
    "write_failure",
]
