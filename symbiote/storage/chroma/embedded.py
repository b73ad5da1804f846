"""The embedded Chroma store, through Chroma's Rust core (`chromadb_rust_bindings`) without its Python client.

`chromadb.PersistentClient` is a thin shim over these bindings (`chromadb.api.rust.RustBindingsAPI`),
but importing the `chromadb` package builds its whole Python API, telemetry and auth on the way:
some 0.35 s of CPU in every start of the store process, 0.7 s of a wake at half a core
(docs/performance.md). The bindings alone import in 0.05 s. This module is the part of that shim a
Symbiote store uses: the same bindings called with the same arguments, the same result dicts, and
the input checks Chroma's collection makes (its ValueError and TypeError), so that
`ChromaMemoryStore` and `ChromaHistoryStore` cannot tell it from Chroma's own client. A Chroma
server (`CHROMA_HOST`) is still reached through `chromadb.HttpClient`.

Chroma keeps one system per path in a process (`SharedSystemClient`): two cores on one directory
would each keep their own index in memory. `EmbeddedChroma.open` does the same, counted, so every
client of a path in a process shares one core until the last is closed.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from symbiote.workers import import_numpy

TENANT = "default_tenant"
DATABASE = "default_database"
# What `chromadb.api.collection_configuration.create_collection_configuration_to_json_str` makes of
# {"hnsw": {"space": "cosine"}}, the only configuration Symbiote creates (tests/storage/test_embedded.py).
COSINE_CONFIGURATION = '{"hnsw": {"space": "cosine"}, "spann": null, "embedding_function": {"type": "legacy"}}'
GET_INCLUDE = ("metadatas", "documents")
QUERY_INCLUDE = ("metadatas", "documents", "distances")
_SCALARS = (str, int, float, bool, type(None))


def preload() -> None:
    """Import Chroma's core and numpy now, before the first open needs them."""
    import chromadb_rust_bindings  # noqa: F401

    import_numpy()


# How long a closed core's connections may take to close on Chroma's own threads (milliseconds at rest;
# past it, the files stay off limits to this process's other SQLite, `EmbeddedChroma.holds`).
CLOSE_WAIT_S = 5.0


def _files_open(key: str) -> bool | None:
    """Whether this process has Chroma's SQLite files at `key` (a resolved path) open; None where the
    system does not list a process's files (`/proc/self/fd` is Linux's)."""
    names = {os.path.join(key, "chroma.sqlite3" + suffix) for suffix in ("", "-wal", "-shm")}
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for descriptor in descriptors:
        try:
            if os.readlink(f"/proc/self/fd/{descriptor}") in names:
                return True
        except OSError:  # closed since the listing
            continue
    return False


class _Core:
    """One path's bindings and how many clients hold them."""

    def __init__(self, path: Path) -> None:
        import chromadb_rust_bindings as rust

        sqlite = rust.SqliteDBConfig(
            hash_type=rust.MigrationHash.MD5,  # Chroma's default `migrations_hash_algorithm`
            migration_mode=rust.MigrationMode.Apply,
            url=str(path / "chroma.sqlite3"),
        )
        # As RustBindingsAPI sizes it: each HNSW index keeps 4 data files and 1 metadata file open.
        cache_size = resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 5
        self.bindings = rust.Bindings(
            allow_reset=False, sqlite_db_config=sqlite, persist_path=str(path), hnsw_cache_size=cache_size
        )
        self.clients = 0


class EmbeddedChroma:
    """A client of the embedded store at one path: the collections, and the batch limit."""

    _cores: dict[str, _Core] = {}
    _opened: set[str] = set()  # every path this process opened a core on
    _lock = threading.Lock()

    def __init__(self, key: str, core: _Core) -> None:
        self._key = key
        self._core: _Core | None = core

    @classmethod
    def open(cls, path: Path) -> EmbeddedChroma:
        """A client of the store at `path`, sharing this process's core for it (made if none is)."""
        import_numpy()  # results carry numpy arrays; a first numpy import must not race another thread's
        key = _key(path)
        with cls._lock:
            core = cls._cores.get(key)
            if core is None:
                cls._opened.add(key)
                core = cls._cores[key] = _Core(path)
            core.clients += 1
        return cls(key, core)

    @classmethod
    def holds(cls, path: Path) -> bool:
        """Whether Chroma's SQLite files at `path` may be open in this process: a core is, or one was
        and its connections have not all closed yet (they close on Chroma's own threads). Another SQLite
        library in this process must not open them then: POSIX locks belong to the process, so that
        library would take the locks Chroma's connections hold, reset the shared WAL index under them
        and release their locks at its close, which corrupts the database."""
        key = _key(path)
        with cls._lock:
            if key in cls._cores:
                return True
            if key not in cls._opened:
                return False
        files = _files_open(key)
        return True if files is None else files

    @classmethod
    def forget(cls, path: Path) -> None:
        """Drop the core for `path` whoever holds it: after a failed open, so the next open starts afresh.
        Where no client holds it (or Chroma failed to make one), wait until its connections have closed."""
        key = _key(path)
        with cls._lock:
            core = cls._cores.pop(key, None)
            idle = core is None or core.clients <= 0
        del core
        if idle:
            _wait_closed(key)

    @property
    def bindings(self) -> Any:
        if self._core is None:
            raise RuntimeError("this Chroma client is closed")
        return self._core.bindings

    def close(self) -> None:
        """Release this client; the last one of a path lets its core go (its files and threads)."""
        with self._lock:
            core, self._core = self._core, None
            if core is None:
                return
            core.clients -= 1
            if core.clients > 0 or self._cores.get(self._key) is not core:
                return
            del self._cores[self._key]
        del core  # its bindings go with it; Chroma closes their connections on its own threads
        _wait_closed(self._key)

    def get_max_batch_size(self) -> int:
        return int(self.bindings.get_max_batch_size())

    def list_collections(self) -> list[EmbeddedCollection]:
        return [
            EmbeddedCollection(self, model) for model in self.bindings.list_collections(None, None, TENANT, DATABASE)
        ]

    def get_collection(self, name: str) -> EmbeddedCollection:
        return EmbeddedCollection(self, self.bindings.get_collection(name, TENANT, DATABASE))

    def get_or_create_collection(
        self,
        name: str,
        metadata: Mapping[str, Any] | None = None,
        configuration: Mapping[str, Any] | None = None,
        embedding_function: None = None,
    ) -> EmbeddedCollection:
        """Chroma's `get_or_create_collection`, for the one configuration Symbiote makes (cosine HNSW)."""
        if configuration not in (None, {"hnsw": {"space": "cosine"}}):
            raise ValueError(f"the embedded store makes cosine HNSW collections only, not {configuration!r}")
        if metadata is not None:
            _check_metadata(metadata)
        model = self.bindings.create_collection(
            name,
            COSINE_CONFIGURATION if configuration else None,
            None,
            dict(metadata) if metadata else None,
            True,
            TENANT,
            DATABASE,
        )
        return EmbeddedCollection(self, model)


def _key(path: Path) -> str:
    """One key per directory, however it is written (relative, through a link)."""
    return os.path.realpath(path)


def _wait_closed(key: str) -> None:
    """Wait until Chroma has closed the connections of a core let go, so that the check before the next
    open in this process finds the files free (`EmbeddedChroma.holds`). A call still in flight keeps
    them open longer: the wait ends at `CLOSE_WAIT_S` and the files stay off limits meanwhile."""
    deadline = time.monotonic() + CLOSE_WAIT_S
    while _files_open(key) and time.monotonic() < deadline:
        time.sleep(0.002)
    if _files_open(key):
        logging.getLogger(__name__).info("Chroma's connections to %s are still open after its client closed", key)


class EmbeddedCollection:
    """One collection, with the methods of `chromadb.Collection` the stores call, and the same results."""

    def __init__(self, client: EmbeddedChroma, model: Any) -> None:
        self._client = client
        self.id = str(model.id)
        self.name: str = model.name
        self.metadata: dict[str, Any] | None = model.metadata
        self.configuration: dict[str, Any] = model.configuration or {}

    def count(self) -> int:
        return int(self._client.bindings.count(self.id, TENANT, DATABASE))

    def get(
        self,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        include: Sequence[str] = GET_INCLUDE,
    ) -> dict[str, Any]:
        import numpy as np

        include = list(include)
        got = self._client.bindings.get(
            self.id,
            _ids(ids) if ids is not None else None,
            _where(where),
            limit,
            offset or 0,
            None,
            include,
            TENANT,
            DATABASE,
        )
        return {
            "ids": got.ids,
            "embeddings": np.array(got.embeddings) if "embeddings" in include else got.embeddings,
            "documents": got.documents,
            "uris": got.uris if "uris" in include else None,
            "included": include,
            "data": None,
            "metadatas": got.metadatas,
        }

    def query(
        self,
        query_embeddings: Any,
        n_results: int = 10,
        where: Mapping[str, Any] | None = None,
        include: Sequence[str] = QUERY_INCLUDE,
    ) -> dict[str, Any]:
        import numpy as np

        if n_results <= 0:
            raise TypeError(f"Number of requested results {n_results}, cannot be negative, or zero.")
        include = list(include)
        found = self._client.bindings.query(
            self.id, None, _embeddings(query_embeddings), n_results, _where(where), None, include, TENANT, DATABASE
        )
        embeddings = found.embeddings
        if "embeddings" in include and embeddings is not None:
            embeddings = [np.array(each) for each in embeddings]
        return {
            "ids": found.ids,
            "embeddings": embeddings,
            "documents": found.documents,
            "uris": found.uris if "uris" in include else None,
            "included": include,
            "data": None,
            "metadatas": found.metadatas,
            "distances": found.distances,
        }

    def add(
        self,
        ids: Sequence[str],
        embeddings: Any,
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        documents: Sequence[str] | None = None,
    ) -> None:
        listed, vectors = _records(ids, embeddings, metadatas, documents)
        self._client.bindings.add(listed, self.id, vectors, _rows(metadatas), _rows(documents), None, TENANT, DATABASE)

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: Any,
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        documents: Sequence[str] | None = None,
    ) -> None:
        listed, vectors = _records(ids, embeddings, metadatas, documents)
        self._client.bindings.upsert(
            self.id, listed, vectors, _rows(metadatas), _rows(documents), None, TENANT, DATABASE
        )

    def update(
        self,
        ids: Sequence[str],
        embeddings: Any = None,
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        documents: Sequence[str] | None = None,
    ) -> None:
        listed, vectors = _records(ids, embeddings, metadatas, documents, update=True)
        self._client.bindings.update(
            self.id, listed, vectors, _rows(metadatas), _rows(documents), None, TENANT, DATABASE
        )

    def delete(self, ids: Sequence[str] | None = None, where: Mapping[str, Any] | None = None) -> None:
        if ids is None and where is None:
            raise ValueError("You must provide either ids, where, or where_document to delete.")
        self._client.bindings.delete(
            self.id, _ids(ids) if ids is not None else None, _where(where), None, None, TENANT, DATABASE
        )

    def modify(self, metadata: Mapping[str, Any]) -> None:
        _check_metadata(metadata)
        if "hnsw:space" in metadata:
            raise ValueError(
                "Changing the distance function of a collection once it is created is not supported currently."
            )
        self._client.bindings.update_collection(self.id, None, dict(metadata), None)
        self.metadata = dict(metadata)


def _ids(ids: Sequence[str] | str) -> list[str]:
    """Chroma's `validate_ids`: a non-empty list of distinct strings (one string is one id). An empty
    list is refused, never passed on: to the core no ids would mean every record."""
    listed = [ids] if isinstance(ids, str) else list(ids)
    if not listed:
        raise ValueError("Expected IDs to be a non-empty list, got 0 IDs")
    seen: set[str] = set()
    twice: set[str] = set()
    for each in listed:
        if not isinstance(each, str):
            raise ValueError(f"Expected ID to be a str, got {each}")
        (twice if each in seen else seen).add(each)
    if twice:
        raise ValueError(f"Expected IDs to be unique, found duplicates of: {', '.join(sorted(twice))}")
    return listed


def _embeddings(target: Any) -> list[Any]:
    """Chroma's `normalize_embeddings`: one vector or many, as a list of float32 arrays."""
    import numpy as np

    if len(target) == 0:
        raise ValueError(f"Expected Embeddings to be non-empty list or numpy array, got {target}")
    if isinstance(target, np.ndarray):
        if target.ndim == 1:
            return [target]
        if target.ndim == 2:
            return list(target)
    elif isinstance(target, list):
        first = target[0]
        if isinstance(first, (int, float)) and not isinstance(first, bool):
            return [np.array(target, dtype=np.float32)]
        if isinstance(first, np.ndarray):
            return target
        if isinstance(first, list) and first and isinstance(first[0], (int, float)) and not isinstance(first[0], bool):
            return [np.array(row, dtype=np.float32) for row in target]
    raise ValueError(
        "Expected embeddings to be a list of floats or ints, a list of lists, a numpy array, or a list of numpy "
        f"arrays, got {target}"
    )


def _where(where: Mapping[str, Any] | None) -> str | None:
    """The filter as the core reads it, checked as Chroma's `validate_where` checks it: the core
    takes an empty filter, or an `$and` of no clauses, as every record (a delete, all of them)."""
    if where is None:
        return None
    _check_where(where)
    return json.dumps(where)


_OPERATORS = ("$gt", "$gte", "$lt", "$lte", "$ne", "$eq", "$in", "$nin", "$contains", "$not_contains")


def _check_where(where: Any) -> None:
    """Chroma's `validate_where` (chromadb.api.types), which importing chromadb would bring: the same
    rules and messages."""
    if not isinstance(where, dict):
        raise ValueError(f"Expected where to be a dict, got {where}")
    if len(where) != 1:
        raise ValueError(f"Expected where to have exactly one operator, got {where}")
    for key, value in where.items():
        if not isinstance(key, str):
            raise ValueError(f"Expected where key to be a str, got {key}")
        if key in ("$contains", "$not_contains"):
            raise ValueError(
                f"Expected where key to be a metadata field name or a logical operator ($and, $or), got {key}"
            )
        if key not in ("$and", "$or", "$in", "$nin") and not isinstance(value, (str, int, float, dict)):
            raise ValueError(f"Expected where value to be a str, int, float, or operator expression, got {value}")
        if key in ("$and", "$or"):
            if not isinstance(value, list):
                raise ValueError(f"Expected where value for $and or $or to be a list of where expressions, got {value}")
            if len(value) <= 1:
                raise ValueError(
                    f"Expected where value for $and or $or to be a list with at least two where expressions, got {value}"
                )
            for clause in value:
                _check_where(clause)
        if isinstance(value, dict):
            _check_operator(key, value)


def _check_operator(key: str, expression: dict[Any, Any]) -> None:
    if len(expression) != 1:
        raise ValueError(f"Expected operator expression to have exactly one operator, got {expression}")
    for operator, operand in expression.items():
        if operator in ("$gt", "$gte", "$lt", "$lte") and not isinstance(operand, (int, float)):
            raise ValueError(f"Expected operand value to be an int or a float for operator {operator}, got {operand}")
        if operator in ("$in", "$nin") and not isinstance(operand, list):
            raise ValueError(f"Expected operand value to be an list for operator {operator}, got {operand}")
        if operator in ("$contains", "$not_contains"):
            if key == "#document" and not isinstance(operand, str):
                raise ValueError(
                    f"Expected operand value to be a str for operator {operator} on #document, got {operand}"
                )
            if not isinstance(operand, (str, int, float, bool)):
                raise ValueError(
                    f"Expected operand value to be a str, int, float, or bool for operator {operator}, got {operand}"
                )
        if operator not in _OPERATORS:
            raise ValueError(f"Expected where operator to be one of {', '.join(_OPERATORS)}, got {operator}")
        if not isinstance(operand, (str, int, float, bool, list)):
            raise ValueError(
                f"Expected where operand value to be a str, int, float, bool, or list of those type, got {operand}"
            )
        if isinstance(operand, list) and (not operand or not all(isinstance(x, type(operand[0])) for x in operand)):
            raise ValueError(
                "Expected where operand value to be a non-empty list, and all values to be of the same type "
                f"got {operand}"
            )


def _rows(values: Sequence[Any] | None) -> list[Any] | None:
    return list(values) if values is not None else None


def _records(
    ids: Sequence[str],
    embeddings: Any,
    metadatas: Sequence[Mapping[str, Any] | None] | None,
    documents: Sequence[str] | None,
    update: bool = False,
) -> tuple[list[str], list[Any] | None]:
    """Chroma's record checks: the ids, embeddings (required but in an update) as the core takes them,
    one entry per id in every field given, and each metadata valid."""
    listed = _ids(ids)
    if embeddings is None and not update:
        raise ValueError("You must provide embeddings: this collection has no embedding function.")
    vectors = _embeddings(embeddings) if embeddings is not None else None
    for name, values in (("embeddings", vectors), ("metadatas", metadatas), ("documents", documents)):
        if values is not None and len(values) != len(listed):
            raise ValueError(f"Unequal lengths for fields: ids: {len(listed)}, {name}: {len(values)}")
    for metadata in metadatas or ():
        if metadata is not None:
            _check_metadata(metadata)
    return listed, vectors


def _check_metadata(metadata: Mapping[str, Any]) -> None:
    """Chroma's `validate_metadata`: a non-empty dict of str keys to scalars (None too) or lists of them."""
    if not isinstance(metadata, dict):
        raise ValueError(f"Expected metadata to be a dict or None, got {type(metadata).__name__} as metadata")
    if not metadata:
        raise ValueError("Expected metadata to be a non-empty dict, got 0 metadata attributes")
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise TypeError(f"Expected metadata key to be a str, got {key} which is a {type(key).__name__}")
        if key == "chroma:document":
            raise ValueError("Expected metadata to not contain the reserved key chroma:document")
        if isinstance(value, list):
            _check_list(key, value)
        elif not isinstance(value, _SCALARS):
            raise ValueError(
                "Expected metadata value to be a str, int, float, bool, SparseVector, list, or None, "
                f"got {value} which is a {type(value).__name__}"
            )


def _check_list(key: str, value: list[Any]) -> None:
    """Chroma's `_validate_metadata_list_value`: non-empty, and every item of one type (bool apart from int)."""
    if not value:
        raise ValueError(f"Expected metadata list value for key '{key}' to be non-empty")
    kinds = {bool if isinstance(item, bool) else type(item) for item in value}
    if len(kinds) != 1 or not kinds <= {str, int, float, bool}:
        raise ValueError(
            f"Expected metadata list value for key '{key}' to contain only str, int, float, or bool "
            f"and all elements must be the same type, got {value}"
        )
