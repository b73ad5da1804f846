"""Links between two memories about the same thing: made at store time, shown by every surface,
reviewed by the owner.

A store finds the nearest older memories anyway (the near-duplicate check); when one of them is
about the same thing (`symbiote.retrieval.sameness`), the two are linked on both records: the one
to show first carries `supersedes`, the other `superseded_by`. Nothing is deleted by a link, and
the owner can keep it, merge the two (delete the one replaced) or undo it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from symbiote.errors import InvalidInputError, MemoryNotFoundError
from symbiote.memory import validation
from symbiote.memory.store_io import StoreIO
from symbiote.retrieval.sameness import LinkKind, fuller_is_newer, judge
from symbiote.storage.base import MemoryStore, StoredMemory


@dataclass(frozen=True)
class NewLink:
    """How a memory just stored was linked: to `other`, and whether it is the one shown first."""

    other: str
    kind: LinkKind
    new_first: bool


@dataclass(frozen=True)
class Link:
    """A link as the owner reviews it: the memory shown first and the one it replaces."""

    first: StoredMemory
    second: StoredMemory | None  # None when the replaced memory is gone
    kind: str
    kept: bool


def _linked(first: StoredMemory, second: StoredMemory, kind: LinkKind) -> tuple[StoredMemory, StoredMemory]:
    """Both records with the link written in; a memory in a chain keeps the kind of its own link."""
    return (
        replace(first, supersedes=second.memory_id, link_kind=kind, link_kept=False),
        replace(second, superseded_by=first.memory_id, link_kind=second.link_kind if second.supersedes else kind),
    )


async def link_new(
    io: StoreIO[MemoryStore], store: MemoryStore, memory: StoredMemory, nearest: list[tuple[str, float, str]]
) -> NewLink | None:
    """Link a memory just stored to the nearest older one about the same thing, if there is one.
    Costs nothing more than the store unless a link is made (then one read and one write)."""
    for mid, cosine, text in nearest:
        kind = judge(text, memory.content, cosine)
        if kind is None:
            continue
        new_first = kind == "update" or fuller_is_newer(text, memory.content)
        old = (await io.read(store.get, [mid], urgent=False)).get(mid)
        if old is None or old.superseded_by or (not new_first and old.supersedes):
            continue  # already replaced (the newest of its chain is among the nearest too), or already linked
        pair = _linked(memory, old, kind) if new_first else _linked(old, memory, kind)
        await io.write(store.set_links, list(pair))
        return NewLink(other=mid, kind=kind, new_first=new_first)
    return None


def _cleared(memory: StoredMemory, side: str) -> StoredMemory:
    """`memory` without its link on one side ("supersedes" or "superseded_by")."""
    if side == "supersedes":
        return replace(
            memory, supersedes=None, link_kept=False, link_kind=memory.link_kind if memory.superseded_by else None
        )
    return replace(memory, superseded_by=None, link_kind=memory.link_kind if memory.supersedes else None)


class MemoryLinks:
    """The owner's review of the links: list them, keep one, merge the two, or undo it."""

    def __init__(self, io: StoreIO[MemoryStore], delete: Callable[[str], Awaitable[object]]) -> None:
        self._io = io
        self._delete = delete  # the engine's delete: statistics and the partners' links kept right

    async def _get(self, ids: list[str]) -> dict[str, StoredMemory]:
        store = await self._io.opened()
        return await self._io.read(store.get, [i for i in ids if i])

    async def _first(self, memory_id: object) -> tuple[StoredMemory, StoredMemory | None]:
        """The memory shown first of a link, and the one it replaces (None when that one is gone)."""
        mid = validation.memory_id(memory_id)
        found = await self._get([mid])
        if mid not in found:
            raise MemoryNotFoundError(mid)
        first = found[mid]
        if not first.supersedes:
            raise InvalidInputError(f"{mid} replaces no other memory: there is no link to review.")
        return first, (await self._get([first.supersedes])).get(first.supersedes)

    async def links(self) -> list[Link]:
        """Every link, newest first (by the memory shown first)."""
        store = await self._io.opened()
        heads = [m for m in await self._io.read(store.scan) if m.supersedes]
        heads.sort(key=lambda m: (m.created_us, m.memory_id), reverse=True)
        found = await self._get([m.memory_id for m in heads] + [m.supersedes or "" for m in heads])
        return [
            Link(
                first=found[m.memory_id], second=found.get(m.supersedes or ""), kind=m.link_kind or "", kept=m.link_kept
            )
            for m in heads
            if m.memory_id in found
        ]

    async def count(self) -> tuple[int, int]:
        """How many links there are, and how many of them the owner has not reviewed."""
        store = await self._io.opened()
        heads = [m for m in await self._io.read(store.scan) if m.supersedes]
        return len(heads), sum(not m.link_kept for m in heads)

    async def keep(self, memory_id: object) -> None:
        """The owner agrees: both memories stay, linked, and the link is marked as reviewed."""
        first, _second = await self._first(memory_id)
        store = await self._io.opened()
        await self._io.write(store.set_links, [replace(first, link_kept=True)])

    async def undo(self, memory_id: object) -> None:
        """The owner disagrees: both memories stay, unlinked."""
        first, second = await self._first(memory_id)
        changed = [_cleared(first, "supersedes")]
        if second is not None and second.superseded_by == first.memory_id:
            changed.append(_cleared(second, "superseded_by"))
        store = await self._io.opened()
        await self._io.write(store.set_links, changed)

    async def merge(self, memory_id: object) -> str | None:
        """Keep the memory shown first only: the one it replaces is deleted. Returns that one's id."""
        first, second = await self._first(memory_id)
        if second is None:
            await self.undo(first.memory_id)
            return None
        await self._delete(second.memory_id)
        return second.memory_id


async def unlink_partners(
    io: StoreIO[MemoryStore], store: MemoryStore, memory: StoredMemory, gone: set[str] | frozenset[str] = frozenset()
) -> None:
    """Before `memory` is deleted: the memories linked to it lose the link, so none points at nothing
    (`gone`: the memories deleted with it, left as they are)."""
    ids = [m for m in (memory.supersedes, memory.superseded_by) if m and m not in gone]
    if not ids:
        return
    partners = await io.read(store.get, ids, urgent=False)
    changed = []
    for partner in partners.values():
        if partner.superseded_by == memory.memory_id:
            partner = _cleared(partner, "superseded_by")
        if partner.supersedes == memory.memory_id:
            partner = _cleared(partner, "supersedes")
        changed.append(partner)
    if changed:
        await io.write(store.set_links, changed)
