"""Links between two memories about the same thing: made at store time, shown by every surface,
reviewed by the owner.

A store finds the nearest older memories anyway (the near-duplicate check); when one of them is
about the same thing (`symbiote.retrieval.sameness`), the two are linked on both records: the one
to show first carries `supersedes`, the other `superseded_by`. Nothing is deleted by a link, and
the owner can keep it, merge the two (delete the one replaced) or undo it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from symbiote.errors import InvalidInputError, MemoryNotFoundError
from symbiote.memory import validation
from symbiote.memory.ids import created_us as id_created_us
from symbiote.memory.store_io import StoreIO
from symbiote.retrieval.sameness import LinkKind, fuller_is_newer, judge, stands_out
from symbiote.storage.base import MemoryStore, StoredMemory


@dataclass(frozen=True)
class NewLink:
    """How a memory just stored was linked: to `other`, and whether it is the one shown first."""

    other: str
    kind: LinkKind
    new_first: bool


@dataclass(frozen=True)
class Link:
    """A link as the owner reviews it: the memory replaced, and the one shown first instead."""

    replaced: StoredMemory
    first: StoredMemory | None  # None when the memory shown first is gone
    kind: str
    kept: bool


def _linked(first: StoredMemory, replaced: StoredMemory, kind: LinkKind) -> tuple[StoredMemory, StoredMemory]:
    """Both records with the link written in. The link belongs to the replaced memory (its
    `superseded_by`, kind and review); a memory replacing several names the latest in `supersedes`."""
    return (
        replace(first, supersedes=replaced.memory_id, link_kind=first.link_kind if first.superseded_by else kind),
        replace(replaced, superseded_by=first.memory_id, link_kind=kind, link_kept=False),
    )


async def link_new(
    io: StoreIO[MemoryStore], store: MemoryStore, memory: StoredMemory, nearest: list[tuple[StoredMemory, float]]
) -> NewLink | None:
    """Link a memory just stored to the nearest older one about the same thing, if there is one.
    The store returned the nearest with their links, so this costs one write, and only for a link."""
    for old, cosine in nearest:
        kind = judge(old.content, memory.content, cosine)
        if kind is None:
            continue
        new_first = kind == "update" or fuller_is_newer(old.content, memory.content)
        if new_first and old.superseded_by:
            continue  # already replaced: the newest of its chain is among the nearest too
        # a memory already replaced is no rival: it is the older end of the chain being extended
        rivals = [c for other, c in nearest if other.memory_id != old.memory_id and not other.superseded_by]
        if not stands_out(cosine, rivals):
            continue
        pair = _linked(memory, old, kind) if new_first else _linked(old, memory, kind)
        await io.write(store.set_links, list(pair))
        return NewLink(other=old.memory_id, kind=kind, new_first=new_first)
    return None


def _without_replaced(memory: StoredMemory) -> StoredMemory:
    """`memory` no longer naming the memory it replaced."""
    return replace(memory, supersedes=None, link_kind=memory.link_kind if memory.superseded_by else None)


def _without_replacer(memory: StoredMemory) -> StoredMemory:
    """`memory` no longer replaced by another."""
    return replace(
        memory, superseded_by=None, link_kept=False, link_kind=memory.link_kind if memory.supersedes else None
    )


def without_links(memory: StoredMemory) -> StoredMemory:
    """`memory` linked to nothing (as it goes to the trash: restored, it points at no one)."""
    return _without_replaced(_without_replacer(memory))


class MemoryLinks:
    """The owner's review of the links: list them, keep one, merge the two, or undo it. Each link
    is named by the memory it replaced (a memory is replaced by one other at most)."""

    def __init__(self, io: StoreIO[MemoryStore], delete: Callable[[str], Awaitable[object]]) -> None:
        self._io = io
        self._delete = delete  # the engine's delete: statistics and the partners' links kept right

    async def _get(self, ids: list[str]) -> dict[str, StoredMemory]:
        store = await self._io.opened()
        return await self._io.read(store.get, list(dict.fromkeys(i for i in ids if i)))  # Chroma refuses an id twice

    async def _link(self, memory_id: object) -> tuple[StoredMemory, StoredMemory | None]:
        """The memory replaced, and the one replacing it (None when that one is gone)."""
        mid = validation.memory_id(memory_id)
        found = await self._get([mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        replaced = found[mid]
        if not replaced.superseded_by:
            raise InvalidInputError(f"{mid} is not replaced by another memory: there is no link to review.")
        return replaced, (await self._get([replaced.superseded_by])).get(replaced.superseded_by)

    async def _replaced(self) -> list[StoredMemory]:
        store = await self._io.opened()
        return [m for m in await self._io.read(store.scan) if m.superseded_by]

    async def links(self) -> list[Link]:
        """Every link, newest first (by the later of its two memories)."""
        heads = await self._replaced()
        found = await self._get([m.memory_id for m in heads] + [m.superseded_by or "" for m in heads])

        def made(m: StoredMemory) -> int:
            return max(m.created_us, id_created_us(m.superseded_by or m.memory_id))

        heads.sort(key=lambda m: (made(m), m.memory_id), reverse=True)
        return [
            Link(
                replaced=found[m.memory_id],
                first=found.get(m.superseded_by or ""),
                kind=m.link_kind or "update",
                kept=m.link_kept,
            )
            for m in heads
            if m.memory_id in found
        ]

    async def count(self) -> tuple[int, int]:
        """How many links there are, and how many of them the owner has not reviewed."""
        heads = await self._replaced()
        return len(heads), sum(not m.link_kept for m in heads)

    async def keep(self, memory_id: object) -> None:
        """The owner agrees: both memories stay, linked, and the link is marked as reviewed."""
        replaced, _first = await self._link(memory_id)
        store = await self._io.opened()
        await self._io.write(store.set_links, [replace(replaced, link_kept=True)])

    async def undo(self, memory_id: object) -> None:
        """The owner disagrees: both memories stay, unlinked."""
        replaced, first = await self._link(memory_id)
        changed = [_without_replacer(replaced)]
        if first is not None and first.supersedes == replaced.memory_id:
            changed.append(_without_replaced(first))
        store = await self._io.opened()
        await self._io.write(store.set_links, changed)

    async def merge(self, memory_id: object) -> None:
        """Keep the memory shown first only: the one it replaces is deleted."""
        replaced, first = await self._link(memory_id)
        if first is None:
            await self.undo(replaced.memory_id)
            return
        await self._delete(replaced.memory_id)


async def unlink(io: StoreIO[MemoryStore], store: MemoryStore, memories: Sequence[StoredMemory]) -> None:
    """Before `memories` go to the trash: they and the memories linked to them lose those links, so
    none points at nothing, and one restored points at no one. One read of the partners, at most one
    scan without texts (only when one of them replaced others: who it replaced is found there), and
    one write."""
    gone = {m.memory_id for m in memories}
    ids = list(dict.fromkeys(p for m in memories for p in (m.supersedes, m.superseded_by) if p and p not in gone))
    partners = dict(await io.read(store.get, ids, urgent=False)) if ids else {}
    if any(m.supersedes for m in memories):
        for other in await io.read(store.scan, urgent=False):
            if other.superseded_by in gone and other.memory_id not in gone:
                partners.setdefault(other.memory_id, other)
    changed = [without_links(m) for m in memories if m.supersedes or m.superseded_by]
    for partner in partners.values():
        if partner.superseded_by in gone:
            partner = _without_replacer(partner)
        if partner.supersedes in gone:
            partner = _without_replaced(partner)
        changed.append(partner)
    if changed:
        await io.write(store.set_links, changed)
