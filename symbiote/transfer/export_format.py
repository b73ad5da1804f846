"""The export file: JSON Lines, a header first, then one memory (or conversation turn) per line.

One format for leaving and arriving, read and written only here, so the export, the import and
docs/export-format.md cannot drift apart. Times are ISO-8601 UTC with microseconds, converted
exactly (integer arithmetic, no floats), so an export, an import and a second export give the
same lines. Vectors, when asked for, are base64 float32 little-endian: exact and a third the size
of decimal text.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from symbiote.errors import InvalidInputError, SymbioteError
from symbiote.memory import created_us as id_created_us
from symbiote.memory import instant_us, iso_utc, validation
from symbiote.storage import StoredMemory, content_hash

if TYPE_CHECKING:
    import numpy as np

FORMAT_NAME = "symbiote-memories"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1 (before links between memories) reads as memories without links
FUTURE_SLACK_US = 86_400 * 1_000_000  # clocks differ; a time further ahead than a day is a mistake or a trick


class LineError(SymbioteError):
    """One line of an import file that cannot be taken; the message says why, for the report."""


def parse_instant(text: Any, name: str) -> int:
    """An ISO-8601 time (UTC when it names no zone) in microseconds since the epoch, exactly: the
    engine's own parser (`clock.instant_us`), its failure worded for the import report."""
    if not isinstance(text, str) or not text.strip():
        raise LineError(f"{name} must be an ISO-8601 time like 2026-01-31T09:30:00.000000Z")
    try:
        return instant_us(text)
    except ValueError:
        raise LineError(f"{name}={text!r} is not an ISO-8601 time") from None


def dumps(record: dict[str, Any]) -> str:
    """One line, compact, non-ASCII kept readable; the newline is the caller's."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Header:
    model: str
    dimension: int
    memories: int
    turns: int = 0
    exported_at: str = ""
    vectors: bool = False
    history: bool = False

    def line(self) -> str:
        return dumps(
            {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "exported_at": self.exported_at,
                "model": self.model,
                "dimension": self.dimension,
                "counts": {"memories": self.memories, "turns": self.turns},
                "vectors": self.vectors,
                "history": self.history,
            }
        )


def is_header(record: dict[str, Any]) -> bool:
    return record.get("format") == FORMAT_NAME


def read_header(record: dict[str, Any]) -> Header:
    version = record.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        readable = " and ".join(str(v) for v in READABLE_VERSIONS)
        raise LineError(f"format version {version!r} is not one this Symbiote reads (it reads {readable})")
    found = record.get("counts")
    counts: dict[str, Any] = found if isinstance(found, dict) else {}
    dimension = record.get("dimension")
    return Header(
        model=str(record.get("model") or ""),
        dimension=dimension if isinstance(dimension, int) else 0,
        memories=_count(counts.get("memories")),
        turns=_count(counts.get("turns")),
        exported_at=str(record.get("exported_at") or ""),
        vectors=bool(record.get("vectors")),
        history=bool(record.get("history")),
    )


def _count(value: Any) -> int:
    """A header's count (informative only): a whole number, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# -- memories ------------------------------------------------------------------------------------


def encode_vectors(vectors: np.ndarray) -> list[str]:
    return [base64.b64encode(row.astype("<f4").tobytes()).decode("ascii") for row in vectors]


def decode_vectors(value: Any, dimension: int) -> np.ndarray:
    import numpy as np

    if not isinstance(value, list) or not value:
        raise LineError("vectors must be a non-empty list of base64 float32 strings")
    rows = []
    for position, text in enumerate(value, start=1):
        try:
            row = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4")
        except (ValueError, TypeError):
            raise LineError(f"vector {position} is not base64") from None
        if row.shape[0] != dimension:
            raise LineError(f"vector {position} has {row.shape[0]} dimensions, the header says {dimension}")
        if not np.isfinite(row).all():  # Chroma would refuse the whole batch it went in with
            raise LineError(
                f"vector {position} holds a value that is not a number (NaN or infinity); remove the line's "
                '"vectors" to have the memory embedded again from its text'
            )
        rows.append(row)
    return np.stack(rows).astype(np.float32)


def memory_record(memory: StoredMemory, vectors: np.ndarray | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": "memory",
        "id": memory.memory_id,
        "content": memory.content,
        "tags": list(memory.tags),
        "type": memory.type,
        "metadata": {
            "confidence": memory.confidence,
            "bookmarked": memory.bookmarked,
            "conversation_id": memory.conversation_id,
        },
        "created": iso_utc(memory.created_us),
        "updated": iso_utc(memory.updated_us) if memory.updated_us else None,
    }
    if memory.supersedes or memory.superseded_by:
        record["links"] = {
            "supersedes": memory.supersedes,
            "superseded_by": memory.superseded_by,
            "kind": memory.link_kind,
            "kept": memory.link_kept,
            "by": (memory.link_by or "server") if memory.superseded_by else None,
        }
    if vectors is not None:
        record["vectors"] = encode_vectors(vectors)
    return record


def _links(value: Any) -> dict[str, Any]:
    """A memory line's `links` as StoredMemory's fields (none when the line has none)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LineError("links must be an object")
    ids = {
        name: _checked(validation.memory_id, value[name]) if value.get(name) is not None else None
        for name in ("supersedes", "superseded_by")
    }
    kind = value.get("kind")
    if kind not in ("update", "duplicate", None):
        raise LineError("links.kind must be 'update' or 'duplicate'")
    if not any(ids.values()):
        return {}
    kept = _checked(validation.flag, value.get("kept", False), "links.kept")
    by = value.get("by")
    if by not in ("server", "assistant", "owner", None):
        raise LineError("links.by must be 'server', 'assistant' or 'owner'")
    made_by = by if by != "server" and ids["superseded_by"] is not None else None
    return {
        **ids,
        "link_kind": kind or "update",
        "link_kept": kept and ids["superseded_by"] is not None,
        "link_by": made_by,
    }


@dataclass(frozen=True)
class IncomingMemory:
    """A memory read from a file: complete but for an id when the file gave none."""

    memory: StoredMemory  # memory_id "" when the file gave none (one is made from `created_us`)
    vectors: np.ndarray | None = field(default=None, compare=False)


def _checked(check: Any, *args: Any) -> Any:
    try:
        return check(*args)
    except InvalidInputError as exc:
        raise LineError(str(exc)) from None


def read_memory(record: dict[str, Any], now_us: int, dimension: int | None, max_bytes: int) -> IncomingMemory:
    """A memory line, validated as the tools validate what they store, its text held to `max_bytes`
    (SYMBIOTE_MAX_CONTENT_BYTES as configured). `dimension` None: vectors in the line are not
    wanted (another model made them) and are not read."""
    memory_id = _checked(validation.memory_id, record["id"]) if record.get("id") is not None else ""
    text = _checked(validation.content, record.get("content"), max_bytes)
    tags = tuple(_checked(validation.tags, record.get("tags")))
    kind = _checked(validation.memory_type, record["type"]) if record.get("type") is not None else None
    meta = record.get("metadata") or {}
    if not isinstance(meta, dict):
        raise LineError("metadata must be an object")
    confidence = _checked(validation.confidence, meta["confidence"]) if meta.get("confidence") is not None else None
    bookmarked = _checked(validation.flag, meta.get("bookmarked", False), "bookmarked")
    conversation = meta.get("conversation_id")
    if conversation is not None:
        conversation = _checked(validation.conversation_id, conversation)
    if record.get("created") is not None:
        created = parse_instant(record["created"], "created")
    else:
        created = id_created_us(memory_id) if memory_id else now_us
    updated = parse_instant(record["updated"], "updated") if record.get("updated") is not None else None
    if created <= 0 or (updated is not None and updated <= 0):
        raise LineError("times must be after 1970")
    if max(created, updated or 0) > now_us + FUTURE_SLACK_US:
        raise LineError("created and updated must not be in the future")
    vectors = None
    if dimension is not None and record.get("vectors") is not None:
        vectors = decode_vectors(record["vectors"], dimension)
    memory = StoredMemory(
        memory_id=memory_id,
        content=text,
        timestamp="",  # set from created_us when stored
        created_us=created,
        tags=tags,
        content_hash=content_hash(text),
        type=kind,
        confidence=confidence,
        bookmarked=bookmarked,
        updated_us=updated,
        conversation_id=conversation,
        **_links(record.get("links")),
    )
    if memory_id and memory_id in (memory.supersedes, memory.superseded_by):
        raise LineError("a memory cannot be linked to itself")
    return IncomingMemory(memory, vectors)


# -- conversation turns --------------------------------------------------------------------------


def turn_record(conversation_id: str, turn_index: int, role: str, text: str, ts: str) -> dict[str, Any]:
    return {
        "kind": "turn",
        "conversation_id": conversation_id,
        "turn_index": turn_index,
        "role": role,
        "text": text,
        "ts": ts,
    }
