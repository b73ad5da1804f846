"""Links between two memories about the same thing: made at store time, shown by every surface,
confirmed by the assistant, reviewed by the owner.

A store finds the nearest older memories anyway (the near-duplicate check); when one of them is
about the same thing (`symbiote.retrieval.sameness`), the two are linked on both records: the one
to show first carries `supersedes`, the other `superseded_by`. Nothing is deleted by a link, and
the owner can keep it, merge the two (delete the one replaced) or undo it. What the rule is not
sure of is offered instead (`offers`, a store's `may_replace`), and the assistant, which understands
what changed, confirms it: `replaces` at store time, or `link` afterwards. Each link records who made
it (`link_by` on the memory replaced: None for the server's rule, ASSISTANT, OWNER).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from symbiote.errors import InvalidInputError, MemoryNotFoundError
from symbiote.memory import validation
from symbiote.memory.ids import created_us as id_created_us
from symbiote.memory.records import LinkResult
from symbiote.memory.store_io import StoreIO
from symbiote.retrieval.sameness import LinkKind, fuller_is_newer, judge, may_be_same, offer_stands_out, stands_out
from symbiote.storage import MemoryStore, StoredMemory

log = logging.getLogger(__name__)

SERVER, ASSISTANT, OWNER = "server", "assistant", "owner"  # who made a link (the server's is stored as None)
MAX_OFFERS = 3


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
    by: str = SERVER  # who made it: SERVER, ASSISTANT or OWNER


def made_by(memory: StoredMemory) -> str:
    """Who made the link that replaces `memory` (links from before 2026-11-27 were all the server's)."""
    return memory.link_by or SERVER


def _linked(
    first: StoredMemory, replaced: StoredMemory, kind: str, by: str | None = None
) -> tuple[StoredMemory, StoredMemory]:
    """Both records with the link written in. The link belongs to the replaced memory (its
    `superseded_by`, kind, review and maker); a memory replacing several names the latest in `supersedes`."""
    return (
        replace(first, supersedes=replaced.memory_id, link_kind=first.link_kind if first.superseded_by else kind),
        replace(replaced, superseded_by=first.memory_id, link_kind=kind, link_kept=False, link_by=by),
    )


def decide(
    memory: StoredMemory, nearest: Sequence[tuple[StoredMemory, float]]
) -> tuple[NewLink, tuple[StoredMemory, StoredMemory]] | None:
    """The link the server's rule makes for a memory just stored, and both records with it, if any."""
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
        return NewLink(other=old.memory_id, kind=kind, new_first=new_first), pair
    return None


async def link_new(
    io: StoreIO[MemoryStore], memory: StoredMemory, nearest: list[tuple[StoredMemory, float]]
) -> NewLink | None:
    """Link a memory just stored to the nearest older one about the same thing, if there is one.
    The store returned the nearest with their links, so this costs one write, and only for a link."""
    decided = decide(memory, nearest)
    if decided is None:
        return None
    await io.write(MemoryStore.set_links, list(decided[1]))
    return decided[0]


def offers(
    memory: StoredMemory, nearest: Sequence[tuple[StoredMemory, float]], linked: Sequence[str] = ()
) -> list[tuple[StoredMemory, float]]:
    """The older memories that may hold an earlier value of what `memory` says: of the same holder,
    not already replaced, not linked by this store, and standing out from the other nearest by
    STANDOUT, as a link's must (in a conversation every turn is about as close as the next: none is
    offered). For the assistant to confirm (`replaces`, link_memories) or ignore. At most MAX_OFFERS."""
    live = [
        (old, cosine)
        for old, cosine in sorted(nearest, key=lambda pair: -pair[1])
        if old.memory_id != memory.memory_id and old.memory_id not in linked and not old.superseded_by
    ]
    found = [
        (old, cosine)
        for old, cosine in live
        if old.supersedes != memory.memory_id
        and may_be_same(old.content, memory.content, cosine)
        and offer_stands_out(cosine, [c for other, c in live if other.memory_id != old.memory_id])
    ]
    return found[:MAX_OFFERS]


def confirmed(
    newer: StoredMemory, olders: Sequence[StoredMemory], kind: str, by: str, partners: dict[str, StoredMemory]
) -> list[StoredMemory]:
    """Every record a confirmed link changes: `newer` replacing each of `olders`. An older memory
    already replaced by a third one moves to `newer` (that one no longer names it). `partners`:
    the memories replacing the olders now, by id, as read."""
    changed: dict[str, StoredMemory] = {}
    first = newer
    for old in olders:
        previous = old.superseded_by
        if previous and previous != newer.memory_id and previous in partners:
            other = changed.get(previous, partners[previous])
            if other.supersedes == old.memory_id:
                changed[previous] = _without_replaced(other)
        first, replaced = _linked(first, old, kind, by)
        changed[replaced.memory_id] = replaced
    changed[first.memory_id] = first
    return list(changed.values())


def _without_replaced(memory: StoredMemory) -> StoredMemory:
    """`memory` no longer naming the memory it replaced."""
    return replace(memory, supersedes=None, link_kind=memory.link_kind if memory.superseded_by else None)


def _without_replacer(memory: StoredMemory) -> StoredMemory:
    """`memory` no longer replaced by another."""
    return replace(
        memory, superseded_by=None, link_kept=False, link_kind=memory.link_kind if memory.supersedes else None
    )


def without_links(memory: StoredMemory) -> StoredMemory:
    """`memory` linked to nothing."""
    return _without_replaced(_without_replacer(memory))


async def refuse_cycle(
    get: Callable[[list[str]], Awaitable[dict[str, StoredMemory]]], newer: StoredMemory, older_id: str
) -> None:
    """Refuse a link by which `older_id` would replace itself through `newer`'s replacements: the
    chain is walked to its end however long it is (a limit would let a longer chain close a loop).
    The one check of every path that links two stored memories (link_memories, `replaces`, the
    same text stored again with `replaces`)."""
    current, seen = newer, {newer.memory_id}
    while current.superseded_by:
        if current.superseded_by == older_id:
            raise InvalidInputError(
                f"{older_id} already replaces {newer.memory_id} (directly or through others): "
                f"linking {newer.memory_id} as its replacement would make a cycle. Unlink them first."
            )
        if current.superseded_by in seen:
            return  # a loop made before this check held: it ends here rather than running forever
        seen.add(current.superseded_by)
        following = (await get([current.superseded_by])).get(current.superseded_by)
        if following is None:
            return
        current = following


class MemoryLinks:
    """The owner's review of the links: list them, keep one, merge the two, or undo it. Each link
    is named by the memory it replaced (a memory is replaced by one other at most)."""

    def __init__(self, io: StoreIO[MemoryStore], delete: Callable[[str], Awaitable[object]]) -> None:
        self._io = io
        self._delete = delete  # the engine's delete: statistics and the partners' links kept right

    async def _get(self, ids: list[str]) -> dict[str, StoredMemory]:
        return await self._io.read(
            MemoryStore.get, list(dict.fromkeys(i for i in ids if i))
        )  # Chroma refuses an id twice

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
        return [m for m in await self._io.read(MemoryStore.scan) if m.superseded_by]

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
                by=made_by(m),
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
        await self._io.write(MemoryStore.set_links, [replace(replaced, link_kept=True)])

    async def undo(self, memory_id: object) -> None:
        """The owner disagrees: both memories stay, unlinked."""
        replaced, first = await self._link(memory_id)
        changed = [_without_replacer(replaced)]
        if first is not None and first.supersedes == replaced.memory_id:
            changed.append(_without_replaced(first))
        await self._io.write(MemoryStore.set_links, changed)

    async def link(self, newer_id: object, older_id: object, kind: object, by: str) -> LinkResult:
        """`newer` replaces `older` (kind "update": a new value; "duplicate": the same fact, said
        again), as `by` confirms. Both must exist, be two, and make no cycle."""
        newer_mid, older_mid = validation.memory_id(newer_id), validation.memory_id(older_id)
        checked = validation.link_kind(kind)
        if newer_mid == older_mid:
            raise InvalidInputError(f"{newer_mid} cannot replace itself: pass two different memories.")
        found = await self._get([newer_mid, older_mid])
        for mid in (newer_mid, older_mid):
            if mid not in found:
                raise MemoryNotFoundError(mid)
        newer, older = found[newer_mid], found[older_mid]
        if older.superseded_by == newer_mid and older.link_kind == checked:
            return _result(newer_mid, older_mid, checked, made_by(older), "Already linked: nothing changed.")
        await refuse_cycle(self._get, newer, older_mid)
        previous = older.superseded_by
        partners = await self._get([previous]) if previous and previous != newer_mid else {}
        await self._io.write(MemoryStore.set_links, confirmed(newer, [older], checked, by, partners))
        moved = f" It was replaced by {previous} before; not any more." if partners else ""
        return _result(
            newer_mid, older_mid, checked, by, f"Linked: {newer_mid} replaces {older_mid} and is shown first.{moved}"
        )

    async def unlink(self, newer_id: object, older_id: object) -> LinkResult:
        """Undo the link by which `newer` replaces `older`: both stay, unlinked."""
        newer_mid, older_mid = validation.memory_id(newer_id), validation.memory_id(older_id)
        found = await self._get([newer_mid, older_mid])
        for mid in (newer_mid, older_mid):
            if mid not in found:
                raise MemoryNotFoundError(mid)
        older = found[older_mid]
        if older.superseded_by != newer_mid:
            raise InvalidInputError(f"{older_mid} is not replaced by {newer_mid}: there is no such link to undo.")
        if older.link_kept:  # the owner's reviewed decision stands against any client's
            raise InvalidInputError(
                f"The owner reviewed and kept the link by which {newer_mid} replaces {older_mid}; only the owner "
                "can undo it, in the console's Links page."
            )
        await self.undo(older_mid)
        log.info(
            "link undone by the assistant: %s no longer replaces %s (made by %s)", newer_mid, older_mid, made_by(older)
        )
        kind = older.link_kind or "update"
        return _result(
            newer_mid,
            older_mid,
            kind,
            made_by(older),
            "Unlinked: both memories stay, neither replaces the other.",
            False,
        )

    async def merge(self, memory_id: object) -> None:
        """Keep the memory shown first only: the one it replaces is deleted."""
        replaced, first = await self._link(memory_id)
        if first is None:
            await self.undo(replaced.memory_id)
            return
        await self._delete(replaced.memory_id)


def _result(newer: str, older: str, kind: str, by: str, message: str, linked: bool = True) -> LinkResult:
    return LinkResult(newer_id=newer, older_id=older, kind=kind, linked=linked, by=by, message=message)


async def unlink(io: StoreIO[MemoryStore], memories: Sequence[StoredMemory], own: bool = True) -> None:
    """Before `memories` go to the trash: the memories linked to them lose those links, so none
    points at nothing; with `own`, they lose theirs too, else the trash keeps them for `relink`.
    One read of the partners, at most one scan without texts (only when one of them replaced
    others: who it replaced is found there), and one write."""
    gone = {m.memory_id for m in memories}
    ids = list(dict.fromkeys(p for m in memories for p in (m.supersedes, m.superseded_by) if p and p not in gone))
    partners = dict(await io.read_in("background", MemoryStore.get, ids)) if ids else {}
    if any(m.supersedes for m in memories):
        for other in await io.read_in("background", MemoryStore.scan):
            if other.superseded_by in gone and other.memory_id not in gone:
                partners.setdefault(other.memory_id, other)
    changed = [without_links(m) for m in memories if own and (m.supersedes or m.superseded_by)]
    for partner in partners.values():
        if partner.superseded_by in gone:
            partner = _without_replacer(partner)
        if partner.supersedes in gone:
            partner = _without_replaced(partner)
        changed.append(partner)
    if changed:
        await io.write(MemoryStore.set_links, changed)


async def relink(io: StoreIO[MemoryStore], memories: Sequence[StoredMemory]) -> None:
    """After `memories` came back from the trash with the links they had: each link is written back
    on both sides where its partner is still stored and free for it (and no loop would close), and
    dropped from the restored memory where not, so none points at nothing. One read, one write."""
    back = {m.memory_id: m for m in memories}
    ids = [p for m in memories for p in (m.supersedes, m.superseded_by) if p and p not in back]
    partners = dict(await io.read_in("background", MemoryStore.get, list(dict.fromkeys(ids)))) if ids else {}
    partners.update(back)

    async def get(wanted: list[str]) -> dict[str, StoredMemory]:
        return dict(await io.read_in("background", MemoryStore.get, wanted))

    changed: dict[str, StoredMemory] = {}
    for memory in memories:
        kept = changed.get(memory.memory_id, memory)
        older = partners.get(memory.supersedes or "")
        if memory.supersedes and (older is None or older.superseded_by not in (None, memory.memory_id)):
            kept = _without_replaced(kept)
        elif older is not None and older.superseded_by is None:
            try:
                await refuse_cycle(get, memory, older.memory_id)
            except InvalidInputError:
                kept = _without_replaced(kept)
            else:
                _replaced, changed[older.memory_id] = _linked(kept, older, memory.link_kind or "update")
        newer = partners.get(memory.superseded_by or "")
        if memory.superseded_by and newer is None:
            kept = _without_replacer(kept)
        elif newer is not None and newer.supersedes is None:  # it names the latest it replaced: none now
            changed[newer.memory_id] = replace(changed.get(newer.memory_id, newer), supersedes=memory.memory_id)
        if kept != memory:
            changed[memory.memory_id] = kept
    if changed:
        await io.write(MemoryStore.set_links, list(changed.values()))
