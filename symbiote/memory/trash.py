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

from symbiote.errors import SymbioteError
from symbiote.memory.clock import now_us
from symbiote.memory.keyed_lock import Widen, one_writer
from symbiote.memory.links import names, parted, partners, relink
from symbiote.memory.statistics import Statistics
from symbiote.memory.store_io import StoreIO
from symbiote.storage import MemoryStore, StoredMemory, TrashedMemory

log = logging.getLogger(__name__)

TRASH_DAYS = 30  # how long a deleted memory can be restored; said on the trash page and in the README
DAY_US = 86_400 * 1_000_000
OWNER = "owner"
ASSISTANT = "assistant"
CARD = "card"  # the owner, from the memory card: what card_restore may bring back
MOVE_BATCH = 1_000  # memories per write to the trash: searches get their turn between two (about 0.3 s each)
RESTORE_BATCH = 250  # memories per write back: Chroma indexes each vector again (about 5 ms a memory)
SCAN = 500  # rows read at a time when the trash is searched from one end


def _not_by(deleted_by: str) -> str:
    """Why a memory card's undo leaves a memory in the trash: someone else deleted it."""
    who = "an assistant (delete_memory)" if deleted_by == ASSISTANT else "the owner in the console"
    return f"it was deleted by {who}, not by this card; the owner can restore it from the console's trash"


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
        moved together share `deleted_us` (now, unless given): an undo restores that one deletion.
        Held with the memories linked to them (`StoreIO.changing`): those lose the links first, and
        get them back if the move fails."""
        io = self._io
        await io.opened()
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        await self.purge_expired()
        at = deleted_us or now_us()

        async def change(held: frozenset[str]) -> list[str] | Widen:
            found = await io.read_in("background", MemoryStore.get, ids)  # for the statistics and the links
            linked = await partners(io, list(found.values()))
            if not set(linked) <= held:
                return Widen(frozenset(set(linked) - held))
            changed = parted(list(found.values()), linked)
            if changed:
                await io.write(MemoryStore.set_links, changed)
            removed: list[str] = []
            try:
                for start in range(0, len(ids), MOVE_BATCH):
                    removed += await io.write(MemoryStore.trash, ids[start : start + MOVE_BATCH], deleted_by, at)
            except Exception:
                try:
                    await self._links_back(found, linked, changed)
                except SymbioteError:
                    log.exception("giving links back after a failed move to the trash failed")
                raise
            for mid in removed:
                if mid in found:
                    self._stats.removed(found[mid])
            return removed

        return await one_writer(io.changing, ids, change)

    async def _links_back(
        self, found: dict[str, StoredMemory], linked: dict[str, StoredMemory], changed: list[StoredMemory]
    ) -> None:
        """After a move to the trash that failed: the memories still stored get their links as they
        were, and the memories linked to them theirs (those to a memory that did go stay off)."""
        io = self._io
        still = await io.read_in("background", MemoryStore.get, list(found))
        went = [memory for mid, memory in found.items() if mid not in still]
        back = [found[m.memory_id] for m in changed if m.memory_id in still]
        back += [p for p in parted(went, linked) if p.memory_id in linked]
        if back:
            await io.write(MemoryStore.set_links, back)

    async def page(self, offset: int, limit: int) -> TrashPage:
        io = self._io
        await io.opened()
        await self.purge_expired()
        items, total = await io.read(MemoryStore.trashed, offset, limit)
        return TrashPage(items, total)

    async def restore(self, memory_ids: Sequence[str], deleted_by: str | None = None) -> RestoreReport:
        """Bring memories back under their ids, with the links they had where the other memory is
        still there to take them (`links.relink`). One whose id or text is stored again meanwhile
        (an import, the same text stored anew) stays in the trash, with the reason: never two
        copies. `deleted_by`: only what that deleted comes back (the memory card's undo restores
        what the card forgot, not what an assistant or the console deleted)."""
        io = self._io
        await io.opened()
        ids = list(dict.fromkeys(memory_ids))
        keys = set(ids) | names([item.memory for item in await self._items(ids)])

        async def change(held: frozenset[str]) -> RestoreReport | Widen:
            items = await self._items(ids)
            linked = names([item.memory for item in items])
            if not linked <= held:
                return Widen(frozenset(linked - held))
            return await self._restore(ids, items, deleted_by)

        return await one_writer(io.changing, keys, change)

    async def _restore(self, ids: list[str], items: list[TrashedMemory], deleted_by: str | None) -> RestoreReport:
        io = self._io
        clashes: list[tuple[str, str]] = []
        trashed: dict[str, StoredMemory] = {}
        for item in items:
            if deleted_by is None or item.deleted_by == deleted_by:
                trashed[item.memory.memory_id] = item.memory
            else:
                clashes.append((item.memory.memory_id, _not_by(item.deleted_by)))
        found = {item.memory.memory_id for item in items}
        missing = [mid for mid in ids if mid not in found]
        taken = await io.read_in("background", MemoryStore.get, list(trashed)) if trashed else {}
        hashes = [m.content_hash for mid, m in trashed.items() if mid not in taken]
        same_text = await io.read_in("background", MemoryStore.find_contents, hashes) if hashes else {}
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
        if back:
            await relink(io, restored)
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
