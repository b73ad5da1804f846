"""Deleting into the trash, restoring from it, and emptying it: by the owner, or after TRASH_DAYS.

Every delete, the owner's in the console and an assistant's over MCP (`delete_memory`), moves the
memory to the store's trash (`symbiote.storage.chroma.trashing`): at once it is gone from search, reads and
counts, as a deletion must be, and for TRASH_DAYS the owner can bring it back with its id, text,
tags, type, times and vector. After that it is deleted for good (checked at start, at each delete and
each look at the trash, and daily with retention), with a log line naming what went. Retention (RETENTION_DAYS) deletes for good, as before: it is the owner's
own rule, not a mistake to undo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from symbiote.memory.clock import now_us
from symbiote.memory.links import relink, unlink
from symbiote.memory.statistics import Statistics
from symbiote.memory.store_io import StoreIO
from symbiote.storage import MemoryStore, StoredMemory, TrashedMemory

log = logging.getLogger(__name__)

TRASH_DAYS = 30  # how long a deleted memory can be restored; said on the trash page and in the README
DAY_US = 86_400 * 1_000_000
OWNER = "owner"
ASSISTANT = "assistant"
MOVE_BATCH = 1_000  # memories per write to the trash: searches get their turn between two (about 0.3 s each)
RESTORE_BATCH = 250  # memories per write back: Chroma indexes each vector again (about 5 ms a memory)
SCAN = 500  # rows read at a time when the trash is searched from one end


def expires_us(item: TrashedMemory) -> int:
    """When a memory in the trash is deleted for good."""
    return item.deleted_us + TRASH_DAYS * DAY_US


@dataclass(frozen=True)
class TrashPage:
    items: list[TrashedMemory]  # the most recently deleted first
    total: int  # memories in the trash
    days: int = TRASH_DAYS


@dataclass(frozen=True)
class RestoreReport:
    restored: list[str]  # ids back among the memories
    missing: list[str] = field(default_factory=list)  # not in the trash (restored already, or purged)
    clashes: list[tuple[str, str]] = field(default_factory=list)  # (id, why it stays in the trash)


class MemoryTrash:
    """The engine's part of the trash: moves, restores and purges through its store access."""

    def __init__(self, io: StoreIO[MemoryStore], stats: Statistics, kick_passages: Callable[[], None]) -> None:
        self._io = io
        self._stats = stats
        self._kick = kick_passages  # restored memories' passages are queued: index them

    async def move(self, memory_ids: Sequence[str], deleted_by: str, deleted_us: int | None = None) -> list[str]:
        """Move these memories to the trash in one write; returns the ids that existed. Memories
        moved together share `deleted_us` (now, unless given): an undo restores that one deletion."""
        io = self._io
        await io.opened()
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        await self.purge_expired()
        found = await io.read_in("background", MemoryStore.get, ids)  # for the statistics and the links
        await unlink(io, list(found.values()), own=False)  # the trash keeps their own links, for `relink`
        at = deleted_us or now_us()
        removed: list[str] = []
        try:
            for start in range(0, len(ids), MOVE_BATCH):
                removed += await io.write(MemoryStore.trash, ids[start : start + MOVE_BATCH], deleted_by, at)
        except Exception:  # those still stored get their partners' links back, then the error is told
            await self._relink_stored([mid for mid in ids if mid in found and mid not in removed])
            raise
        for mid in removed:
            if mid in found:
                self._stats.removed(found[mid])
        return removed

    async def _relink_stored(self, memory_ids: list[str]) -> None:
        """After a move that failed: the memories still stored have their links written back on
        their partners' side (`unlink` took them off before the move)."""
        try:
            still = await self._io.read_in("background", MemoryStore.get, memory_ids) if memory_ids else {}
            linked = [m for m in still.values() if m.supersedes or m.superseded_by]
            if linked:
                await relink(self._io, linked)
        except Exception:  # the move's own error is what the caller is told; this one is logged
            log.exception("writing back the links of %d memories a failed delete left stored failed", len(memory_ids))

    async def page(self, offset: int, limit: int) -> TrashPage:
        io = self._io
        await io.opened()
        await self.purge_expired()
        items, total = await io.read(MemoryStore.trashed, offset, limit)
        return TrashPage(items, total)

    async def restore(self, memory_ids: Sequence[str]) -> RestoreReport:
        """Bring memories back under their ids. One whose id or text is stored again meanwhile (an
        import, the same text stored anew) stays in the trash, with the reason: never two copies."""
        io = self._io
        await io.opened()
        ids = list(dict.fromkeys(memory_ids))
        trashed = {item.memory.memory_id: item.memory for item in await self._items(ids)}
        missing = [mid for mid in ids if mid not in trashed]
        taken = await io.read_in("background", MemoryStore.get, list(trashed)) if trashed else {}
        hashes = [m.content_hash for mid, m in trashed.items() if mid not in taken]
        same_text = await io.read_in("background", MemoryStore.find_contents, hashes) if hashes else {}
        clashes: list[tuple[str, str]] = []
        wanted: list[StoredMemory] = []
        seen: set[str] = set()
        for mid, memory in trashed.items():
            if mid in taken:
                clashes.append((mid, f"a memory with the id {mid} is stored again"))
            elif memory.content_hash in same_text:
                clashes.append((mid, f"its text is stored again as {same_text[memory.content_hash].memory_id}"))
            elif memory.content_hash in seen:
                clashes.append((mid, "another memory restored now has the same text"))
            else:
                seen.add(memory.content_hash)
                wanted.append(memory)
        restored: list[str] = []
        for start in range(0, len(wanted), RESTORE_BATCH):
            restored += await io.write(
                MemoryStore.restore, [m.memory_id for m in wanted[start : start + RESTORE_BATCH]]
            )
        back = set(restored)
        for memory in wanted:
            if memory.memory_id in back:
                self._stats.added(memory)
        linked = [m for m in wanted if m.memory_id in back and (m.supersedes or m.superseded_by)]
        if linked:
            await relink(io, linked)
        if back:
            self._kick()
        return RestoreReport(restored=restored, missing=missing, clashes=clashes)

    async def deletion(self, deleted_us: int) -> list[str]:
        """The ids still in the trash from the deletion made at `deleted_us` (what its undo restores):
        read from the most recent end, as an undo is for a recent deletion."""
        io = self._io
        await io.opened()
        found: list[str] = []
        offset = 0
        while True:
            items, _total = await io.read_in("background", MemoryStore.trashed, offset, SCAN)
            found += [item.memory.memory_id for item in items if item.deleted_us == deleted_us]
            if len(items) < SCAN or items[-1].deleted_us < deleted_us:
                return found
            offset += SCAN

    async def _items(self, ids: Sequence[str]) -> list[TrashedMemory]:
        items, _total = await self._io.read_in("background", MemoryStore.trashed, 0, 0, list(ids))
        return list(items)

    async def purge(self, memory_ids: Sequence[str] | None) -> list[str]:
        """Delete from the trash for good: these memories, or (None) everything in it."""
        io = self._io
        await io.opened()
        if memory_ids is None:
            _none, total = await io.read_in("background", MemoryStore.trashed, 0, 0)
            items, _total = await io.read_in("background", MemoryStore.trashed, 0, total)
            memory_ids = [item.memory.memory_id for item in items]
        ids = list(dict.fromkeys(memory_ids))
        purged = await self._purge(ids)
        if purged:
            log.info("trash emptied by the owner: %d memories deleted for good: %s", len(purged), purged)
        return purged

    async def _purge(self, ids: list[str]) -> list[str]:
        purged: list[str] = []
        for start in range(0, len(ids), MOVE_BATCH):
            purged += await self._io.write(MemoryStore.purge, ids[start : start + MOVE_BATCH])
        return purged

    async def purge_expired(self) -> list[str]:
        """Delete for good what has been in the trash for TRASH_DAYS; logged. At start, then daily."""
        io = self._io
        await io.opened()
        now = now_us()
        _none, total = await io.read_in("background", MemoryStore.trashed, 0, 0)
        if total == 0:
            return []
        oldest, _total = await io.read_in("background", MemoryStore.trashed, total - 1, 1)
        if not oldest or expires_us(oldest[0]) > now:  # the usual case: one row read
            return []
        expired: list[str] = []
        end = total
        while end > 0:  # from the oldest end, until a memory that has not expired
            items, _total = await io.read_in(
                "background", MemoryStore.trashed, max(0, end - SCAN), end - max(0, end - SCAN)
            )
            gone = [item.memory.memory_id for item in items if expires_us(item) <= now]
            expired += gone
            if len(gone) < len(items):
                break
            end -= SCAN
        purged = await self._purge(expired)
        if purged:
            log.info("trash: %d memories deleted for good after %d days: %s", len(purged), TRASH_DAYS, purged)
        return purged
