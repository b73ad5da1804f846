"""The store on Chroma: the client, the store process, the conversation history's collection,
and opening a store embedded or on a Chroma server.

This is the implementation's door: other packages (and `symbiote.storage` itself) import from
`symbiote.storage.chroma`, never from a module inside it. It is light to import (Chroma and numpy
come with the first store opened), because `symbiote serve` starts the store process from here
before it listens. So the store's classes, which bring numpy, are not part of it:
`ChromaMemoryStore` (`store`), `ServerMemoryStore` (`server_store`), the keyword index
(`keywords`) and what they hold (vectors, trash, passages, batches, bulk reads) are reached through
`open_embedded_store` and `open_server_store`; only this package's own modules and its tests
(tests/storage/) import them by name.
"""

from symbiote.storage.chroma.client import (
    ChromaClients,
    ChromaServer,
    connect_server,
    embedded_client,
    import_chromadb,
    server_problem,
)
from symbiote.storage.chroma.history_store import ChromaHistoryStore, open_history_store
from symbiote.storage.chroma.opening import open_embedded_store, open_server_store
from symbiote.storage.chroma.process import Remote, StoreProcess, for_path, prestart
from symbiote.storage.chroma.segment_files import report as vector_index_report

__all__ = [
    "ChromaClients",
    "ChromaHistoryStore",
    "ChromaServer",
    "Remote",
    "StoreProcess",
    "connect_server",
    "embedded_client",
    "for_path",
    "import_chromadb",
    "open_embedded_store",
    "open_history_store",
    "open_server_store",
    "prestart",
    "server_problem",
    "vector_index_report",
]
