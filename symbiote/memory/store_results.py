"""What storing tells the assistant: the result of each stored memory, its links, and the older
memories it may replace, in words the assistant can act on (kept apart from the write path itself)."""

from __future__ import annotations

from typing import Any

from symbiote.memory.batch_links import BatchLinks
from symbiote.memory.links import NewLink
from symbiote.memory.records import MayReplace, NearDuplicate, StoreResult
from symbiote.storage import StoredMemory

NEAR_DUPLICATE = 0.92  # cosine at or above which a new memory is reported as a near-duplicate


def batch_results(
    drafts: list[StoredMemory],
    existing: dict[str, StoredMemory],
    fresh: dict[str, StoredMemory],
    stamped: dict[str, StoredMemory],
    linking: BatchLinks,
) -> list[StoreResult]:
    """One result per item, in order: stored, already remembered, or repeated within the batch."""
    results = []
    for item in drafts:
        if item.content_hash in existing:
            results.append(_duplicate(existing[item.content_hash], "Already remembered; no copy made."))
        else:
            memory = stamped[item.content_hash]
            first = fresh[item.content_hash] is item
            if not first:
                results.append(_duplicate(memory, "Repeated within the batch; stored once."))
                continue
            link = linking.links.get(memory.memory_id)
            offered = offered_as(linking.offered.get(memory.memory_id, []))
            results.append(
                StoreResult(
                    memory_id=memory.memory_id,
                    timestamp=memory.timestamp,
                    tags=list(memory.tags),
                    status="stored",
                    **link_fields(link),
                    may_replace=offered,
                    message="Memory stored." + link_message(link) + offer_message(memory.memory_id, offered),
                )
            )
    return results


def link_fields(link: NewLink | None) -> dict[str, Any]:
    """A result's fields for the link the server's rule made, if any."""
    if link is None:
        return {}
    return {
        "linked": "supersedes" if link.new_first else "superseded_by",
        "linked_to": link.other,
        "link_kind": link.kind,
    }


def offered_as(found: list[tuple[StoredMemory, float]]) -> list[MayReplace]:
    return [MayReplace(memory_id=m.memory_id, content=m.content, similarity=round(c, 3)) for m, c in found]


def offer_message(memory_id: str, offered: list[MayReplace]) -> str:
    """What the assistant should do with the offers: confirm the one this memory replaces, if any."""
    if not offered:
        return ""
    ids = ", ".join(o.memory_id for o in offered)
    return (
        f" may_replace lists {len(offered)} older memory(ies) that may hold an earlier value of the same thing "
        f"({ids}): if this memory replaces one of them, call link_memories(newer_id='{memory_id}', "
        "older_id=<that id>, kind='update'); if it says the same fact again, kind='duplicate'; otherwise ignore them."
    )


def duplicate_result(existing: StoredMemory) -> StoreResult:
    return StoreResult(
        memory_id=existing.memory_id,
        timestamp=existing.timestamp,
        tags=list(existing.tags),
        status="duplicate",
        message=f"Already remembered: identical content is stored as {existing.memory_id}; no copy made.",
    )


def link_message(link: NewLink | None) -> str:
    if link is None:
        return ""
    if link.kind == "update":
        return f" It updates {link.other}, which is kept, marked superseded_by this memory, and shown after it."
    if link.new_first:
        return f" It says what {link.other} says, and more: both are kept, this one is shown first."
    return f" {link.other} already says this, and more: both are kept, {link.other} is shown first."


def stored_result(
    memory: StoredMemory,
    nearest: list[tuple[StoredMemory, float]],
    link: NewLink | None,
    olders: list[StoredMemory],
    offered: list[MayReplace],
    warning: str | None,
) -> StoreResult:
    """store_memory's result for a memory just stored: its links, near-duplicates and offers."""
    near = [
        NearDuplicate(memory_id=other.memory_id, content=other.content, similarity=round(similarity, 3))
        for other, similarity in nearest
        if similarity >= NEAR_DUPLICATE
    ]
    message = "Memory stored." + link_message(link)
    if olders:
        message += f" It replaces {', '.join(o.memory_id for o in olders)}, as asked: those are kept, shown after it."
    if near:
        message += f" {len(near)} existing memory(ies) say nearly the same; see near_duplicates."
    message += offer_message(memory.memory_id, offered)
    if warning:
        message += f" {warning}"
    fields = link_fields(link)
    if olders:
        fields = {"linked": "supersedes", "linked_to": olders[-1].memory_id, "link_kind": "update"}
    return StoreResult(
        memory_id=memory.memory_id,
        timestamp=memory.timestamp,
        tags=list(memory.tags),
        status="stored",
        near_duplicates=near,
        warning=warning,
        replaced=[o.memory_id for o in olders],
        may_replace=offered,
        message=message,
        **fields,
    )


def _duplicate(memory: StoredMemory, message: str) -> StoreResult:
    """The result for an item whose text is already stored: the stored memory, no copy."""
    return StoreResult(
        memory_id=memory.memory_id,
        timestamp=memory.timestamp,
        tags=list(memory.tags),
        status="duplicate",
        message=message,
    )
