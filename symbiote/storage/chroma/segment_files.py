"""Chroma's vector index files, checked before Chroma opens them, and a damaged one set aside and rebuilt.

The embedded Chroma keeps each collection's records (ids, texts, metadata) in `chroma.sqlite3` and
its vectors in an HNSW index, a directory named for the segment beside it: `header.bin`,
`data_level0.bin` (each vector with its links and label), `length.bin`, `link_lists.bin` and
`index_metadata.pickle` (which label is which record). Chroma rewrites them every thousand
records; a disk that fills meanwhile leaves one empty or cut short. Chroma 1.5.9 then fails every
open of the store ("Error deserializing pickle file: EOF"), reads zeroed links until it crashes the
process, or answers searches from vectors it misread. Its log of writes keeps only the records
since the index was last written, so the vectors of the others are in the damaged files alone.

So before Chroma opens a store, `set_aside_damaged` checks every vector index against what the
format allows (sizes, labels, links, the pickle's maps) and moves a damaged one aside, into
`<segment>.damaged-<time>` in the data directory: Chroma then starts that index afresh from its
log, and the records' vectors are made again from their texts, which SQLite still holds. For the
memories and their passages the engine does that (`REBUILD_FILE` says which collections wait;
`ChromaMemoryStore` queues every memory, `symbiote.memory.passage_indexing` embeds them); a
collection with no such way back (the conversation history's) stays readable in order and is
reported. What was set aside, and whether it was rebuilt, is in `/health` (`report`).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sqlite3
import struct
import time
from pathlib import Path
from typing import Any

from symbiote.storage.base import CHROMA_FILE
from symbiote.storage.disk_errors import exception_chain

log = logging.getLogger(__name__)

REBUILD_FILE = "symbiote-vector-rebuild.json"
PICKLE = "index_metadata.pickle"
INDEX_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin")
# What Symbiote can embed again from the texts Chroma keeps (`ChromaMemoryStore`).
REBUILDABLE = frozenset({"venom_memories", "venom_memories_chunks"})
_HEADER = struct.Struct("<I6QiI3QdQ")  # hnswlib's header as Chroma writes it (persistence version 1)
_DELETED = 0x10000  # in a node's first word, beside its number of links


class _DataOnly(pickle.Unpickler):
    """Chroma writes the label maps as plain dicts, ints and strings: no class is ever looked up."""

    def find_class(self, module: str, name: str, /) -> Any:
        raise pickle.UnpicklingError(f"unexpected {module}.{name} in an HNSW index's metadata")


def problem(folder: Path) -> str | None:
    """What is wrong with the HNSW index in `folder`, or None where Chroma can load it."""
    import numpy as np

    try:
        labels_of: dict[int, str] | None = None
        if (folder / PICKLE).exists():
            with (folder / PICKLE).open("rb") as file:
                try:
                    meta = _DataOnly(file).load()
                except Exception as exc:  # noqa: BLE001 - any failure to read it is the damage
                    return f"{PICKLE} cannot be read ({type(exc).__name__}: {exc or 'cut short'})"
            if not isinstance(meta, dict) or not isinstance(meta.get("label_to_id"), dict):
                return f"{PICKLE} holds no label map"
            labels_of = meta["label_to_id"]
            ids = meta.get("id_to_label")
            if not isinstance(ids, dict) or len(ids) != len(labels_of):
                return f"{PICKLE}'s two maps disagree"
        if not (folder / "header.bin").exists():
            return None if labels_of is None else "header.bin is missing"
        head = (folder / "header.bin").read_bytes()
        if len(head) < _HEADER.size:
            return f"header.bin is cut short ({len(head)} of {_HEADER.size} bytes)"
        (version, level0, capacity, elements, stride, label_at, data_at, top, entry, max_m, max_m0, m, _mult, _ef) = (
            _HEADER.unpack_from(head)
        )
        if (
            version != 1
            or level0 != 0
            or capacity < elements
            or not 0 < m <= max_m <= max_m0
            or data_at != 4 + 4 * max_m0
            or label_at <= data_at
            or (label_at - data_at) % 4
            or stride != label_at + 8
            or (elements and not (0 <= entry < elements and top >= 0))
        ):
            return "header.bin is inconsistent"
        if elements and labels_of is None:
            return f"{PICKLE} is missing for an index of {elements} vectors"
        missing = [name for name in INDEX_FILES if not (folder / name).exists()]
        if missing:
            return f"{', '.join(missing)} missing"
        sizes = {name: (folder / name).stat().st_size for name in INDEX_FILES}
        if sizes["data_level0.bin"] < elements * stride:
            return f"data_level0.bin is cut short ({sizes['data_level0.bin']} bytes for {elements} vectors)"
        if sizes["length.bin"] < elements * 4:
            return f"length.bin is cut short ({sizes['length.bin']} bytes for {elements} vectors)"
        if not elements:
            return None
        # Mapped, not read: the pages stay the file's (Chroma reads them next), the columns read are copied.
        nodes = np.memmap(folder / "data_level0.bin", dtype=np.uint8, mode="r", shape=(elements, stride))
        flags = nodes[:, :4].copy().view(np.uint32)[:, 0]
        degree = flags & 0xFFFF
        if int(degree.max()) > max_m0:
            return "data_level0.bin has a vector with more links than the index allows"
        links = nodes[:, 4:data_at].copy().view(np.uint32)
        used = np.arange(max_m0)[None, :] < degree[:, None]
        if bool((links[used] >= elements).any()):
            return "data_level0.bin links to vectors that do not exist"
        labels = nodes[:, label_at : label_at + 8].copy().view(np.uint64)[:, 0]
        if len(np.unique(labels)) != elements:
            return "data_level0.bin gives two vectors one label"
        assert labels_of is not None
        live = labels[(flags & _DELETED) == 0]
        if len(live) != len(labels_of) or not all(int(label) in labels_of for label in live):
            return f"data_level0.bin and {PICKLE} disagree on which records are indexed"
        return _links_problem(folder / "link_lists.bin", elements, top, entry, max_m)
    except OSError as exc:
        return f"its files cannot be read ({exc})"


def _links_problem(path: Path, elements: int, top: int, entry: int, max_m: int) -> str | None:
    """The upper levels' links: for each vector, their length and then the links of each level."""
    data = path.read_bytes()
    level = 4 + 4 * max_m
    at = 0
    for node in range(elements):
        if at + 4 > len(data):
            return "link_lists.bin is cut short"
        (size,) = struct.unpack_from("<I", data, at)
        at += 4
        if size % level or size // level > max(top, 0) or at + size > len(data):
            return "link_lists.bin is inconsistent"
        if node == entry and size // level != top:  # the search starts at the entry's top level
            return "link_lists.bin does not hold the entry point's levels"
        for start in range(at, at + size, level):
            (count,) = struct.unpack_from("<I", data, start)
            if count > max_m or any(n >= elements for n in struct.unpack_from(f"<{count}I", data, start + 4)):
                return "link_lists.bin links to vectors that do not exist"
        at += size
    return None


def failed_on_index(exc: BaseException) -> bool:
    """Whether Chroma failed to open a store for one of its vector indexes (a damage the checks above
    do not know, such as a version they do not read)."""
    return any("hnsw" in str(each).lower() for each in exception_chain(exc))


def _vector_segments(path: Path) -> list[tuple[str, str]]:
    """(segment id, collection name) of every vector index Chroma's catalogue names; none if the
    catalogue cannot be read (Chroma's own open then says why)."""
    try:
        with sqlite3.connect(f"{(path / CHROMA_FILE).resolve().as_uri()}?mode=ro", uri=True) as catalogue:
            rows = catalogue.execute(
                "SELECT s.id, c.name FROM segments s JOIN collections c ON s.collection = c.id WHERE s.scope = 'VECTOR'"
            ).fetchall()
        catalogue.close()
    except sqlite3.Error as exc:
        log.debug("Chroma's catalogue in %s cannot be read to check its vector indexes: %s", path, exc)
        return []
    return [(str(segment), str(name)) for segment, name in rows]


def set_aside_damaged(path: Path, everything_because: str | None = None) -> list[dict[str, Any]]:
    """Move every damaged vector index of the store at `path` aside (with `everything_because`, every
    one: Chroma refused to open them for that reason) and note it in `REBUILD_FILE`. Returns what
    this call set aside."""
    from symbiote.storage.chroma.embedded import EmbeddedChroma

    if not (path / CHROMA_FILE).is_file() or EmbeddedChroma.holds(path):
        return []  # none yet; or Chroma has them open already (the history's client): not under its feet
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved: list[dict[str, Any]] = []
    for segment, collection in _vector_segments(path):
        folder = path / segment
        if not folder.is_dir():
            continue
        found = everything_because or problem(folder)
        if found is None:
            continue
        aside = path / f"{segment}.damaged-{stamp}"
        folder.rename(aside)
        entry: dict[str, Any] = {"collection": collection, "moved_to": aside.name, "problem": found, "since": stamp}
        entry["rebuilt"] = False if collection in REBUILDABLE else None
        moved.append(entry)
        log.error(
            "Chroma's vector index of %s in %s was damaged (%s); moved aside to %s. %s",
            collection,
            path,
            found,
            aside,
            "Its vectors are being made again from the stored texts."
            if collection in REBUILDABLE
            else "Its records stay stored, but are not found by meaning until the store is restored from a backup.",
        )
    if moved:
        _write(path, [*entries(path), *moved])
    return moved


def entries(path: Path) -> list[dict[str, Any]]:
    """What was set aside in the store at `path`, and whether it was rebuilt."""
    try:
        found = json.loads((path / REBUILD_FILE).read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning(
            "%s in %s cannot be read (%s); treating every memory's vector as to be made again", REBUILD_FILE, path, exc
        )
        return [
            {"collection": name, "moved_to": None, "problem": str(exc), "since": None, "rebuilt": False}
            for name in REBUILDABLE
        ]
    return [entry for entry in found if isinstance(entry, dict)] if isinstance(found, list) else []


def waiting(path: Path) -> set[str]:
    """The collections whose vectors wait to be made again."""
    return {entry["collection"] for entry in entries(path) if entry.get("rebuilt") is False}


def rebuilt(path: Path) -> None:
    """Every vector waiting was made again: noted, so no later open queues them once more."""
    done = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    _write(path, [{**entry, "rebuilt": done} if entry.get("rebuilt") is False else entry for entry in entries(path)])
    log.warning("the vectors of the damaged index set aside in %s were made again from the stored texts", path)


def _write(path: Path, found: list[dict[str, Any]]) -> None:
    partial = path / f"{REBUILD_FILE}.partial"
    with partial.open("w") as file:
        json.dump(found, file, indent=1)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path / REBUILD_FILE)


def report(path: Path) -> dict[str, Any] | None:
    """For `/health`: what was set aside that is still there, what became of it, and what to do."""
    shown = [
        entry for entry in entries(path) if entry.get("moved_to") is None or (path / str(entry["moved_to"])).exists()
    ]
    if not shown:
        return None
    rebuilding = any(entry.get("rebuilt") is False for entry in shown)
    lost = [entry["collection"] for entry in shown if entry.get("rebuilt") is None]
    if lost:
        advice = (
            f"The search index of {', '.join(sorted(set(lost)))} could not be made again from the store: its records are "
            "kept and listed, but not found by meaning. Restore a backup of CHROMADB_PATH to get it back."
        )
    elif rebuilding:
        advice = "Nothing stored was lost; the vectors are being made again from the stored texts (searches may miss some until then)."
    else:
        advice = "Nothing stored was lost and the index was rebuilt; the directories set aside can be deleted."
    return {"set_aside": shown, "rebuilding": rebuilding, "what_to_do": advice, "degraded": rebuilding or bool(lost)}
