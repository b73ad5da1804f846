"""The engine's write path: store one memory or a batch, update, delete, and the retention cleanup.

Every write is validated first and checked against the policy and the quota before the model
embeds it, and checked for disk space before the store sees it, so a refused write leaves no
partial record. Identical content is never stored twice: a store of the same text returns the
existing memory. A store waits only for what makes the memory durable and findable, the whole
text's vector, in one call to the store; its passages are indexed right after
(`symbiote.memory.passage_indexing`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from symbiote.config import MAX_CONTENT_BYTES
from symbiote.embedding import MODEL_DIMENSION
from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.errors import ChangedMeanwhileError, InvalidInputError, MemoryNotFoundError
from symbiote.memory import validation
from symbiote.memory.batch_links import link_batch, nearest_older
from symbiote.memory.clock import iso_utc, now_us
from symbiote.memory.ids import IdGenerator, created_us
from symbiote.memory.keyed_lock import KeyedLock
from symbiote.memory.links import ASSISTANT, LINKING, confirm, link_new, offers
from symbiote.memory.passage_indexing import PassageIndexer
from symbiote.memory.records import (
    BatchStoreResult,
    RetentionResult,
    StoreResult,
    UpdateResult,
    public,
)
from symbiote.memory.requests import StoreRequest, UpdateRequest
from symbiote.memory.statistics import Statistics
from symbiote.memory.store_io import StoreIO
from symbiote.memory.store_results import batch_results, duplicate_result, offered_as, stored_result
from symbiote.memory.write_policy import EnginePolicy, check_conversation, check_quota
from symbiote.storage import MemoryFilter, MemoryStore, StoredMemory, content_hash
from symbiote.storage import text as unicode_text

log = logging.getLogger(__name__)

NEAR_CANDIDATES = 3  # nearest memories checked for near-duplicates


def draft(
    content: Any,
    tags: Any,
    type: Any,
    confidence: Any,
    conversation_id: Any,
    bookmarked: Any,
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
    text = unicode_text.printable(" ".join((name or "").split())[:64])
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


async def _existing(io: StoreIO[MemoryStore], ids: list[str]) -> list[StoredMemory]:
    """The memories `replaces` names, in its order; an id not stored is an error naming it."""
    if not ids:
        return []
    found = await io.read_in("background", MemoryStore.get, ids)
    for mid in ids:
        if mid not in found:
            raise InvalidInputError(f"replaces names {mid}, which is not a stored memory. Nothing was stored.")
    return [found[mid] for mid in ids]


def _changes(old: StoredMemory, request: UpdateRequest, max_bytes: int) -> dict[str, Any]:
    """update_memory's validated changes to `old`; text equal to the stored text is no change."""
    changes: dict[str, Any] = {}
    if request.content is not None:
        text = validation.content(request.content, max_bytes)
        if text != old.content:
            changes["content"] = text
            changes["content_hash"] = content_hash(text)
    if request.tags is not None:
        changes["tags"] = tuple(validation.tags(request.tags))
    if request.type is not None:
        changes["type"] = validation.memory_type(request.type)
    if request.confidence is not None:
        changes["confidence"] = validation.confidence(request.confidence)
    if request.bookmarked is not None:
        changes["bookmarked"] = validation.flag(request.bookmarked, "bookmarked")
    return changes


def _never(_older: StoredMemory) -> bool:
    """No older memory is linked to a memory just stored."""
    return False


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

    async def store(self, request: StoreRequest) -> StoreResult:
        """`replaces`: ids of older memories the new one replaces (the assistant's word): linked at
        once, by the assistant, instead of by the server's rule. Each must exist; none is stored if not."""
        started = time.perf_counter()
        policy = self._policy()
        r = request
        item = draft(r.content, r.tags, r.type, r.confidence, r.conversation_id, r.bookmarked, policy.max_content_bytes)
        item = replace(item, client=client_name(r.client))
        replacing = validation.replaces(r.replaces)
        io = self._io
        await io.opened()
        olders = await _existing(io, replacing)
        await check_conversation(policy, io, item)
        warning = None
        async with self._same_content.hold(item.content_hash):  # two identical stores at once make one memory
            if policy.max_memories is not None:  # a quota counts first; an existing text is not refused by it
                existing = await io.read_in("background", MemoryStore.find_content, item.content_hash)
                if existing is not None:
                    return await self._again(existing, olders)
                warning = await check_quota(policy, io, 1)
            self.passages.write_began()
            (made,) = await self._embedder.passages([item.content])
            windows = made.windows
            await io.ensure_space(windows)
            memory = self._stamp(item)
            existing, nearest = await io.write(MemoryStore.store_new, memory, made.vectors, windows, NEAR_CANDIDATES)
            if existing is not None:
                return await self._again(existing, olders)
            self._stats.added(memory)
            link = None
            if olders:
                await self._confirm(memory, olders)
            else:
                link = await link_new(io, memory, nearest)
        if not made.complete:
            self.passages.kick()
        self._stats.store_timer.add(started)
        linked = [o.memory_id for o in olders] or ([link.other] if link else [])
        return stored_result(memory, nearest, link, olders, offered_as(offers(memory, nearest, linked)), warning)

    async def _confirm(self, memory: StoredMemory, olders: list[StoredMemory]) -> None:
        """Write the links `replaces` asked for: `memory` replaces each of `olders`, by the assistant."""
        await confirm(self._io, memory.memory_id, [o.memory_id for o in olders], "update", ASSISTANT, _never)

    async def _again(self, existing: StoredMemory, olders: list[StoredMemory]) -> StoreResult:
        """The text is stored already: that memory replaces the older ones `replaces` named (not itself;
        a cycle is refused, `links.confirm`)."""
        others = [o.memory_id for o in olders if o.memory_id != existing.memory_id]

        def done(older: StoredMemory) -> bool:
            return older.superseded_by == existing.memory_id

        linked = (
            (await confirm(self._io, existing.memory_id, others, "update", ASSISTANT, done)).linked if others else []
        )
        result = duplicate_result(existing)
        if linked:
            result.replaced = linked
            result.message += f" It now replaces {', '.join(result.replaced)}, as asked."
        return result

    async def store_many(self, items: Any, client: str | None = None) -> BatchStoreResult:
        """Store a batch: every item valid or none stored; one embedding pass, one write of the
        memories and one of their links (each item linked and offered as a store of it alone would be)."""
        name = client_name(client)
        drafts = [replace(d, client=name) for d in _batch_drafts(items, self._policy().max_content_bytes)]
        self.passages.write_began()
        io = self._io
        await io.opened()
        existing = await io.read_in("background", MemoryStore.find_contents, [d.content_hash for d in drafts])
        fresh: dict[str, StoredMemory] = {}
        for item in drafts:
            if item.content_hash not in existing:
                fresh.setdefault(item.content_hash, item)
        warning = await check_quota(self._policy(), io, len(fresh))
        made = await self._embedder.passages([d.content for d in fresh.values()])
        windows = [passages.windows for passages in made]
        await io.ensure_space([text for group in windows for text in group])
        import numpy as np  # loaded with the model: not on the way to `initialize`

        whole = [passages.vectors[0] for passages in made]
        vectors = np.stack(whole) if whole else np.zeros((0, MODEL_DIMENSION), dtype=np.float32)
        stamped = {digest: self._stamp(d) for digest, d in fresh.items()}
        memories = list(stamped.values())
        older = await nearest_older(io, vectors, NEAR_CANDIDATES)
        batch = [(memory, passages.vectors, passages.windows) for memory, passages in zip(memories, made)]
        # The stored memories the batch may link are held from the read of their links to the write.
        async with io.changing.hold_all({LINKING, *(mid for row in older for mid, _cosine in row)}):
            linking = await link_batch(io, memories, vectors, older, NEAR_CANDIDATES)
            await io.write(MemoryStore.add_many, batch)
            if linking.changed:
                await io.write(MemoryStore.set_links, linking.changed)
        for memory, _vectors, _windows in batch:
            self._stats.added(memory)
        if not all(passages.complete for passages in made):
            self.passages.kick()
        results = batch_results(drafts, existing, fresh, stamped, linking)
        stored = len(batch)
        message = f"{stored} stored, {len(drafts) - stored} already remembered."
        if linking.links:
            message += f" {len(linking.links)} linked to a memory about the same thing (see each result)."
        if any(r.may_replace for r in results):
            message += " Some results list may_replace: confirm with link_memories the ones they replace."
        if warning:
            message += f" {warning}"
        return BatchStoreResult(
            results=results, stored=stored, duplicates=len(drafts) - stored, warning=warning, message=message
        )

    async def update(self, request: UpdateRequest, outdated: bool | None = None) -> UpdateResult:
        """Change a memory in place: same id and original timestamp; new text is re-embedded. The
        memory is read and written back holding its id (`StoreIO.changing`): a change made at the
        same time waits, and is made to what this one wrote, never written over. `outdated`: the
        owner's mark put on or taken off the tags as they are then (`validation.marked`)."""
        mid = validation.memory_id(request.memory_id)
        async with self._io.changing.hold(mid):
            return await self._update(mid, request, outdated)

    async def _update(self, mid: str, request: UpdateRequest, outdated: bool | None) -> UpdateResult:
        io = self._io
        found = await io.read(MemoryStore.get, [mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        old = found[mid]
        if outdated is not None:
            request = replace(
                request, tags=validation.marked(old.tags if request.tags is None else request.tags, outdated)
            )
        changes = _changes(old, request, self._policy().max_content_bytes)
        if not changes:
            return UpdateResult(memory=public(old), reembedded=False, message="Nothing to change.")
        memory = replace(old, updated_us=now_us(), edits=old.edits + 1, **changes)
        if "content" in changes:
            (made,) = await self._embedder.passages([memory.content], complete=True)
            await io.ensure_space(made.windows)
            await self._unchanged(old)
            await io.write(MemoryStore.replace, memory, made.vectors, made.windows)
        else:
            await io.ensure_space([""])
            await io.write(MemoryStore.replace, memory, None, [])
        self._stats.replaced(old, memory)
        return UpdateResult(
            memory=public(memory),
            reembedded="content" in changes,
            message="Memory updated" + (" and re-indexed." if "content" in changes else "."),
        )

    async def _unchanged(self, old: StoredMemory) -> None:
        """Refuse to write a change over a memory changed since it was read (`old`), however long
        the embedding took. In this process the memory's id is held and it never is; another
        server on the same Chroma store holds no lock of this one's (docs/security.md)."""
        mid = old.memory_id
        now = (await self._io.read(MemoryStore.get, [mid])).get(mid)
        if now is None:
            raise MemoryNotFoundError(mid)
        if now != old:
            raise ChangedMeanwhileError(
                f"{mid} was changed by someone else while this update was being made; nothing was written. "
                "Read it again (get_memory) and make the change to what it holds now."
            )

    async def apply_retention(self) -> RetentionResult:
        """Delete memories older than RETENTION_DAYS in one batch, never bookmarked ones. Off by default."""
        days = self._policy().retention_days
        if days is None:
            return RetentionResult(removed=0, kept_bookmarked=0, message="Retention is off: memories are kept forever.")
        io = self._io
        await io.opened()
        cutoff = now_us() - days * 86_400 * 1_000_000
        old = await io.read_in("background", MemoryStore.scan, MemoryFilter(before_us=cutoff))
        keep = [m for m in old if m.bookmarked]
        doomed = [m.memory_id for m in old if not m.bookmarked]
        removed = await io.write(MemoryStore.delete_many, doomed) if doomed else []
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
