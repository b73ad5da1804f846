"""The engine's write path: store one memory or a batch, update, delete, and the retention cleanup.

Every write is validated first and checked against the policy and the quota before the model
embeds it, and checked for disk space before the store sees it, so a refused write leaves no
partial record. Identical content is never stored twice: a store of the same text returns the
existing memory. A store waits only for what makes the memory durable and findable, the whole
text's vector, in one call to the store; its passages are indexed right after
(`symbiote.memory.passages`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from symbiote.config import MAX_CONTENT_BYTES
from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.errors import InvalidInputError, MemoryNotFoundError
from symbiote.memory import validation
from symbiote.memory.clock import iso_utc, now_us
from symbiote.memory.ids import IdGenerator, created_us
from symbiote.memory.keyed_lock import KeyedLock
from symbiote.memory.links import NewLink, link_new
from symbiote.memory.passages import PassageIndexer
from symbiote.memory.policy import EnginePolicy, check_conversation, check_quota
from symbiote.memory.records import (
    BatchStoreResult,
    NearDuplicate,
    RetentionResult,
    StoreResult,
    UpdateResult,
    public,
)
from symbiote.memory.statistics import Statistics
from symbiote.memory.store_io import StoreIO
from symbiote.storage.base import MemoryStore, StoredMemory, content_hash
from symbiote.storage.filters import MemoryFilter

log = logging.getLogger(__name__)

NEAR_DUPLICATE = 0.92  # cosine at or above which a new memory is reported as a near-duplicate
NEAR_CANDIDATES = 3  # nearest memories checked for near-duplicates


def draft(
    content: Any,
    tags: Any,
    type: Any,
    confidence: Any,
    conversation_id: Any,
    bookmarked: Any,  # noqa: A002
    max_bytes: int = MAX_CONTENT_BYTES,
) -> StoredMemory:
    """A validated memory without id or time yet."""
    text = validation.content(content, max_bytes)
    return StoredMemory(
        memory_id="",
        content=text,
        timestamp="",
        created_us=0,
        tags=tuple(validation.tags(tags)),
        content_hash=content_hash(text),
        type=validation.memory_type(type) if type is not None else None,
        confidence=validation.confidence(confidence) if confidence is not None else None,
        bookmarked=validation.flag(bookmarked, "bookmarked"),
        conversation_id=validation.conversation_id(conversation_id) if conversation_id is not None else None,
    )


def client_name(name: str | None) -> str | None:
    """What stored a memory, as recorded with it: a client's self-declared name, cut to 64 characters."""
    text = " ".join((name or "").split())[:64]
    return text or None


def _batch_drafts(items: Any, max_bytes: int) -> list[StoredMemory]:
    """store_memories' items as drafts: every one valid, or an error naming the first that is not."""
    drafts: list[StoredMemory] = []
    for position, item in enumerate(validation.batch(items), start=1):
        try:
            drafts.append(
                draft(
                    item.get("content"),
                    item.get("tags"),
                    item.get("type"),
                    item.get("confidence"),
                    item.get("conversation_id"),
                    item.get("bookmarked", False),
                    max_bytes,
                )
            )
        except InvalidInputError as exc:
            raise InvalidInputError(f"item {position}: {exc} Nothing was stored.") from None
    return drafts


def _batch_results(
    drafts: list[StoredMemory],
    existing: dict[str, StoredMemory],
    fresh: dict[str, StoredMemory],
    stamped: dict[str, StoredMemory],
) -> list[StoreResult]:
    """One result per item, in order: stored, already remembered, or repeated within the batch."""
    results = []
    for item in drafts:
        if item.content_hash in existing:
            old = existing[item.content_hash]
            results.append(
                StoreResult(
                    memory_id=old.memory_id,
                    timestamp=old.timestamp,
                    tags=list(old.tags),
                    status="duplicate",
                    message="Already remembered; no copy made.",
                )
            )
        else:
            memory = stamped[item.content_hash]
            first = fresh[item.content_hash] is item
            results.append(
                StoreResult(
                    memory_id=memory.memory_id,
                    timestamp=memory.timestamp,
                    tags=list(memory.tags),
                    status="stored" if first else "duplicate",
                    message="Memory stored." if first else "Repeated within the batch; stored once.",
                )
            )
    return results


def _duplicate(existing: StoredMemory) -> StoreResult:
    return StoreResult(
        memory_id=existing.memory_id,
        timestamp=existing.timestamp,
        tags=list(existing.tags),
        status="duplicate",
        message=f"Already remembered: identical content is stored as {existing.memory_id}; no copy made.",
    )


def _link_message(link: NewLink | None) -> str:
    if link is None:
        return ""
    if link.kind == "update":
        return f" It updates {link.other}, which is kept, marked superseded_by this memory, and shown after it."
    if link.new_first:
        return f" It says what {link.other} says, and more: both are kept, this one is shown first."
    return f" {link.other} already says this, and more: both are kept, {link.other} is shown first."


def _changes(
    old: StoredMemory,
    content: Any,
    tags: Any,
    type: Any,
    confidence: Any,
    bookmarked: Any,  # noqa: A002
    max_bytes: int,
) -> dict[str, Any]:
    """update_memory's validated changes to `old`; text equal to the stored text is no change."""
    changes: dict[str, Any] = {}
    if content is not None:
        text = validation.content(content, max_bytes)
        if text != old.content:
            changes["content"] = text
            changes["content_hash"] = content_hash(text)
    if tags is not None:
        changes["tags"] = tuple(validation.tags(tags))
    if type is not None:
        changes["type"] = validation.memory_type(type)
    if confidence is not None:
        changes["confidence"] = validation.confidence(confidence)
    if bookmarked is not None:
        changes["bookmarked"] = validation.flag(bookmarked, "bookmarked")
    return changes


class MemoryWriter:
    """Stores, updates and deletes memories, and tells the statistics what changed."""

    def __init__(
        self, embedder: AsyncEmbedder, io: StoreIO[MemoryStore], stats: Statistics, policy: Callable[[], EnginePolicy]
    ) -> None:
        self._embedder = embedder
        self._io = io
        self._stats = stats
        self._policy = policy  # read at each write: the engine's policy may be replaced
        self._ids = IdGenerator()
        self._same_content = KeyedLock()
        self.passages = PassageIndexer(embedder, io)
        io.on_open.append(self.passages.kick)  # what a crash or a stop left queued is indexed at open

    def _stamp(self, item: StoredMemory) -> StoredMemory:
        memory_id = self._ids.new()
        micros = created_us(memory_id)
        return replace(item, memory_id=memory_id, created_us=micros, timestamp=iso_utc(micros))

    async def store(
        self,
        content: Any,
        tags: Any = None,
        type: Any = None,  # noqa: A002 - the tool's argument name
        confidence: Any = None,
        conversation_id: Any = None,
        bookmarked: Any = False,
        client: str | None = None,
    ) -> StoreResult:
        started = time.perf_counter()
        policy = self._policy()
        item = draft(content, tags, type, confidence, conversation_id, bookmarked, policy.max_content_bytes)
        item = replace(item, client=client_name(client))
        io = self._io
        store = await io.opened()
        await check_conversation(policy, io, store, item)
        warning = None
        async with self._same_content.hold(item.content_hash):  # two identical stores at once make one memory
            if policy.max_memories is not None:  # a quota counts first; an existing text is not refused by it
                existing = await io.read(store.find_content, item.content_hash, urgent=False)
                if existing is not None:
                    return _duplicate(existing)
                warning = await check_quota(policy, io, store, 1)
            self.passages.write_began()
            windows, vector = await self._embedder.first(item.content)
            await io.ensure_space(windows)
            memory = self._stamp(item)
            existing, nearest = await io.write(store.store_new, memory, vector[None, :], windows, NEAR_CANDIDATES)
            if existing is not None:
                return _duplicate(existing)
            self._stats.added(memory)
            link = await link_new(io, store, memory, nearest)
        if len(windows) > 1:
            self.passages.kick()
        self._stats.store_timer.add(started)
        near = [
            NearDuplicate(memory_id=other.memory_id, content=other.content, similarity=round(similarity, 3))
            for other, similarity in nearest
            if similarity >= NEAR_DUPLICATE
        ]
        message = "Memory stored." + _link_message(link)
        if near:
            message += f" {len(near)} existing memory(ies) say nearly the same; see near_duplicates."
        if warning:
            message += f" {warning}"
        return StoreResult(
            memory_id=memory.memory_id,
            timestamp=memory.timestamp,
            tags=list(memory.tags),
            status="stored",
            near_duplicates=near,
            warning=warning,
            linked=None if link is None else "supersedes" if link.new_first else "superseded_by",
            linked_to=link.other if link else None,
            link_kind=link.kind if link else None,
            message=message,
        )

    async def store_many(self, items: Any, client: str | None = None) -> BatchStoreResult:
        """Store a batch: every item valid or none stored; one embedding pass, one write."""
        name = client_name(client)
        drafts = [replace(d, client=name) for d in _batch_drafts(items, self._policy().max_content_bytes)]
        self.passages.write_began()
        io = self._io
        store = await io.opened()
        existing = await io.read(store.find_contents, [d.content_hash for d in drafts], urgent=False)
        fresh: dict[str, StoredMemory] = {}
        for item in drafts:
            if item.content_hash not in existing:
                fresh.setdefault(item.content_hash, item)
        warning = await check_quota(self._policy(), io, store, len(fresh))
        windows = [await self._embedder.windows(d.content) for d in fresh.values()]
        await io.ensure_space([text for group in windows for text in group])
        vectors = await self._embedder.embed([group[0] for group in windows])  # passages follow (see store)
        stamped = {digest: self._stamp(d) for digest, d in fresh.items()}
        batch = [
            (memory, vectors[i : i + 1], group) for i, (memory, group) in enumerate(zip(stamped.values(), windows))
        ]
        await io.write(store.add_many, batch)
        for memory, _vectors, _windows in batch:
            self._stats.added(memory)
        if any(len(group) > 1 for group in windows):
            self.passages.kick()
        results = _batch_results(drafts, existing, fresh, stamped)
        stored = len(batch)
        message = f"{stored} stored, {len(drafts) - stored} already remembered."
        if warning:
            message += f" {warning}"
        return BatchStoreResult(
            results=results, stored=stored, duplicates=len(drafts) - stored, warning=warning, message=message
        )

    async def update(
        self,
        memory_id: Any,
        content: Any = None,
        tags: Any = None,
        type: Any = None,  # noqa: A002
        confidence: Any = None,
        bookmarked: Any = None,
    ) -> UpdateResult:
        """Change a memory in place: same id and original timestamp; new text is re-embedded."""
        mid = validation.memory_id(memory_id)
        io = self._io
        store = await io.opened()
        found = await io.read(store.get, [mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        old = found[mid]
        changes = _changes(old, content, tags, type, confidence, bookmarked, self._policy().max_content_bytes)
        if not changes:
            return UpdateResult(memory=public(old), reembedded=False, message="Nothing to change.")
        memory = replace(old, updated_us=now_us(), edits=old.edits + 1, **changes)
        if "content" in changes:
            windows = await self._embedder.windows(memory.content)
            await io.ensure_space(windows)
            vectors = await self._embedder.embed(windows)
            await io.write(store.replace, memory, vectors, windows)
        else:
            await io.ensure_space([""])
            await io.write(store.replace, memory, None, [])
        self._stats.replaced(old, memory)
        return UpdateResult(
            memory=public(memory),
            reembedded="content" in changes,
            message="Memory updated" + (" and re-indexed." if "content" in changes else "."),
        )

    async def apply_retention(self) -> RetentionResult:
        """Delete memories older than RETENTION_DAYS in one batch, never bookmarked ones. Off by default."""
        days = self._policy().retention_days
        if days is None:
            return RetentionResult(removed=0, kept_bookmarked=0, message="Retention is off: memories are kept forever.")
        io = self._io
        store = await io.opened()
        cutoff = now_us() - days * 86_400 * 1_000_000
        old = await io.read(store.scan, MemoryFilter(before_us=cutoff), urgent=False)
        keep = [m for m in old if m.bookmarked]
        doomed = [m.memory_id for m in old if not m.bookmarked]
        removed = await io.write(store.delete_many, doomed) if doomed else []
        heads = {m.memory_id: m for m in old}
        for mid in removed:
            self._stats.removed(heads[mid])
        log.info(
            "retention (%d days): removed %d memories, skipped %d bookmarked: removed=%s skipped=%s",
            days,
            len(removed),
            len(keep),
            removed,
            [m.memory_id for m in keep],
        )
        return RetentionResult(
            removed=len(removed),
            kept_bookmarked=len(keep),
            message=f"Removed {len(removed)} memories older than {days} days; kept {len(keep)} bookmarked.",
        )
