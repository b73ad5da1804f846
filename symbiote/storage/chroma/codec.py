"""How a memory is written as a Chroma record and read back, and the questions asked of Chroma itself."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from symbiote.errors import StoreUnavailableError
from symbiote.storage import text
from symbiote.storage.base import StoredMemory

if TYPE_CHECKING:
    import numpy as np


def metadata_of(memory: StoredMemory, passages: int, clear_missing: bool = False) -> dict[str, Any]:
    """Chroma metadata for a memory. For an update, `clear_missing` sends None for absent keys,
    which Chroma's merge treats as "remove" (a tag list emptied by an update must not linger).

    Every write and every journal row is made here, so here a memory Chroma would refuse (text that
    is not Unicode, `symbiote.storage.text`) is refused before anything is written or journalled."""
    _check_text(memory)
    meta: dict[str, Any] = {
        "timestamp": memory.timestamp,
        "created_us": memory.created_us,
        "content_hash": memory.content_hash,
        "windows": passages,
        "bookmarked": memory.bookmarked,
    }
    optional = {
        "tags": list(memory.tags) or None,  # Chroma rejects empty lists and None values
        "type": memory.type,
        "confidence": memory.confidence,
        "updated_us": memory.updated_us,
        "conversation_id": memory.conversation_id,
        **link_metadata(memory, clear_missing),
        "edits": memory.edits or None,
        "client": memory.client,
    }
    meta.update({key: value for key, value in optional.items() if value is not None or clear_missing})
    return meta


def _check_text(memory: StoredMemory) -> None:
    text.text(memory.content, "content")
    for position, tag in enumerate(memory.tags, start=1):
        text.text(tag, f"tag {position}")
    for field, value in (("type", memory.type), ("conversation_id", memory.conversation_id), ("client", memory.client)):
        if value is not None:
            text.text(value, field)


def link_metadata(memory: StoredMemory, clear_missing: bool) -> dict[str, Any]:
    """A memory's link fields as metadata (None, with `clear_missing`, removes an absent one)."""
    fields: dict[str, Any] = {
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "link_kind": memory.link_kind,
        "link_kept": True if memory.link_kept else None,
        "link_by": memory.link_by,
    }
    return {key: value for key, value in fields.items() if value is not None or clear_missing}


def memory_from(memory_id: str, document: str | None, meta: dict[str, Any] | None) -> StoredMemory:
    """A memory from its Chroma record (absent metadata reads as defaults)."""
    meta = meta or {}
    confidence = meta.get("confidence")
    updated = meta.get("updated_us")
    return StoredMemory(
        memory_id=memory_id,
        content=document or "",
        timestamp=str(meta.get("timestamp", "")),
        created_us=int(meta.get("created_us", 0)),
        tags=tuple(meta.get("tags") or ()),
        content_hash=str(meta.get("content_hash", "")),
        type=meta.get("type"),
        confidence=float(confidence) if confidence is not None else None,
        bookmarked=bool(meta.get("bookmarked", False)),
        updated_us=int(updated) if updated is not None else None,
        conversation_id=meta.get("conversation_id"),
        supersedes=meta.get("supersedes"),
        superseded_by=meta.get("superseded_by"),
        link_kind=meta.get("link_kind"),
        link_kept=bool(meta.get("link_kept", False)),
        link_by=meta.get("link_by"),
        edits=int(meta.get("edits") or 0),
        client=meta.get("client"),
    )


def repaired(memory: StoredMemory) -> StoredMemory:
    """A memory with its text that is not Unicode shown as U+FFFD (`symbiote.storage.text.repaired`)."""
    fix = text.repaired
    return replace(
        memory,
        content=fix(memory.content),
        tags=tuple(fix(str(tag)) for tag in memory.tags),
        type=fix(memory.type) if memory.type is not None else None,
        conversation_id=fix(memory.conversation_id) if memory.conversation_id is not None else None,
        client=fix(memory.client) if memory.client is not None else None,
    )


def check_identity(collection: Any, model_name: str, dimension: int) -> None:
    """Refuse data embedded by another model: mixing vector spaces silently ruins search."""
    meta = collection.metadata or {}
    space = ((collection.configuration or {}).get("hnsw") or {}).get("space", "cosine")
    stored_model, stored_dim = meta.get("embedding_model"), meta.get("embedding_dim")
    if space != "cosine":
        raise StoreUnavailableError(
            f"The collection {collection.name!r} uses {space!r} distance, but Symbiote needs cosine. "
            "Point CHROMADB_PATH at another directory."
        )
    if stored_model is None and stored_dim is None:
        # Written before the identity was recorded (e.g. by the seed prototype, which used the
        # same model through Chroma's default embedding function): adopt it.
        collection.modify(metadata={**meta, "embedding_model": model_name, "embedding_dim": dimension})
        return
    if stored_model != model_name or int(stored_dim or 0) != dimension:
        raise StoreUnavailableError(
            f"The memories in this store were embedded with {stored_model} ({stored_dim} dimensions), "
            f"but this server uses {model_name} ({dimension} dimensions); mixing them would make search "
            "meaningless. Point CHROMADB_PATH at the matching data, or at a new directory."
        )


def chroma_nearest(
    collection: Any, vector: np.ndarray, k: int, where: dict[str, Any] | None, passages: bool
) -> list[tuple[str, float]]:
    """Chroma's `k` nearest records as (memory id, cosine)."""
    found = collection.query(query_embeddings=[vector.tolist()], n_results=k, where=where, include=["distances"])
    return [
        (rid.rsplit("#", 1)[0] if passages else rid, 1.0 - float(distance))
        for rid, distance in zip(found["ids"][0], found["distances"][0])
    ]
