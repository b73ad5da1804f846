"""Links between two memories about the same thing: made when a memory is stored, shown by every surface,
confirmed by the assistant, reviewed by the owner.

Storing finds the nearest older memories anyway (the near-duplicate check); when one of them is
about the same thing (`symbiote.retrieval.sameness`), the two are linked on both records: the one
to show first carries `supersedes`, the other `superseded_by`. Nothing is deleted by a link, and
the owner can keep it, merge the two (delete the one replaced) or undo it. What the rule is not
sure of is offered instead (`offers`, storing's `may_replace`), and the assistant, which understands
what changed, confirms it: `replaces` as it stores, or `link` afterwards. Each link records who made
it (`link_by` on the memory replaced: None for the server's rule, ASSISTANT, OWNER).

A link is on both of its memories or on neither: every change to one is read and written holding
both ends (and a third memory it moves from, `StoreIO.changing`), and every change that makes one
also holds LINKING, so the cycle check sees every link made before it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from symbiote.errors import InvalidInputError, MemoryNotFoundError
from symbiote.memory import validation
from symbiote.memory.ids import created_us as id_created_us
from symbiote.memory.keyed_lock import Widen, one_writer
from symbiote.memory.records import LinkResult
from symbiote.memory.store_io import StoreIO
from symbiote.retrieval.sameness import LinkKind, fuller_is_newer, judge, may_be_same, offer_stands_out, stands_out
from symbiote.storage import MemoryStore, StoredMemory

log = logging.getLogger(__name__)

SERVER, ASSISTANT, OWNER = "server", "assistant", "owner"  # who made a link (the server's is stored as None)
MAX_OFFERS = 3
LINKING = "linking"  # held by every change that makes a link (no memory id looks like it)


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
    if decide(memory, nearest) is None:
        return None
    cosines = {old.memory_id: cosine for old, cosine in nearest}

    async def change(held: frozenset[str]) -> NewLink | None:
        # Decided again on the records as they are now, held: one linked or unlinked meanwhile counts.
        found = await io.read(MemoryStore.get, sorted(held - {LINKING}))
        fresh = [(found[mid], cosine) for mid, cosine in cosines.items() if mid in found]
        decided = decide(found.get(memory.memory_id, memory), fresh)
        if decided is None:
            return None
        await io.write(MemoryStore.set_links, list(decided[1]))
        return decided[0]

    return await one_writer(io.changing, {LINKING, memory.memory_id, *cosines}, change)


@dataclass(frozen=True)
class Confirmation:
    """What `confirm` did: the older memories as they were read (holding them), and those it linked."""

    olders: list[StoredMemory]
    linked: list[str]


async def confirm(
    io: StoreIO[MemoryStore],
    newer_id: str,
    older_ids: Sequence[str],
    kind: str,
    by: str,
    done: Callable[[StoredMemory], bool],
) -> Confirmation:
    """`newer` replaces each of `older_ids` (those `done` does not say are linked already), as `by`
    confirms: every memory must be stored and no cycle made. Read and written holding every record
    it changes, a third memory an older one moves from included, and LINKING."""

    async def change(held: frozenset[str]) -> Confirmation | Widen:
        found = await io.read(MemoryStore.get, sorted(held - {LINKING}))
        for mid in (newer_id, *older_ids):
            if mid not in found:
                raise MemoryNotFoundError(mid)
        newer, olders = found[newer_id], [found[mid] for mid in older_ids]
        linking = [old for old in olders if not done(old)]
        previous = {o.superseded_by for o in linking if o.superseded_by and o.superseded_by != newer_id}
        if not previous <= held:
            return Widen(frozenset(previous - held))

        async def get(ids: list[str]) -> dict[str, StoredMemory]:
            return await io.read(MemoryStore.get, list(dict.fromkeys(ids)))

        for old in linking:
            await refuse_cycle(get, newer, old.memory_id)
        if linking:
            partners = {mid: found[mid] for mid in previous if mid in found}
            await io.write(MemoryStore.set_links, confirmed(newer, linking, kind, by, partners))
        return Confirmation(olders=olders, linked=[old.memory_id for old in linking])

    return await one_writer(io.changing, {LINKING, newer_id, *older_ids}, change)


def offers(
    memory: StoredMemory, nearest: Sequence[tuple[StoredMemory, float]], linked: Sequence[str] = ()
) -> list[tuple[StoredMemory, float]]:
    """The older memories that may hold an earlier value of what `memory` says: of the same holder,
    not already replaced, not linked as `memory` was stored, and standing out from the other nearest by
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
    """`memory` linked to nothing (as it goes to the trash: restored, it points at no one)."""
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
        mid = validation.memory_id(memory_id)
        async with self._io.changing.hold(mid):
            replaced, _first = await self._link(mid)
            await self._io.write(MemoryStore.set_links, [replace(replaced, link_kept=True)])

    async def undo(self, memory_id: object) -> None:
        """The owner disagrees: both memories stay, unlinked."""
        mid = validation.memory_id(memory_id)

        async def change(held: frozenset[str]) -> Widen | None:
            replaced, first = await self._link(mid)
            if replaced.superseded_by not in held:
                return Widen(frozenset({replaced.superseded_by or ""}))
            await self._write_undo(replaced, first)
            return None

        await one_writer(self._io.changing, [mid], change)

    async def _write_undo(self, replaced: StoredMemory, first: StoredMemory | None) -> None:
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

        def done(older: StoredMemory) -> bool:
            return older.superseded_by == newer_mid and older.link_kind == checked

        confirmation = await confirm(self._io, newer_mid, [older_mid], checked, by, done)
        (older,) = confirmation.olders
        if not confirmation.linked:
            return _result(newer_mid, older_mid, checked, made_by(older), "Already linked: nothing changed.")
        previous = older.superseded_by
        moved = f" It was replaced by {previous} before; not any more." if previous and previous != newer_mid else ""
        return _result(
            newer_mid, older_mid, checked, by, f"Linked: {newer_mid} replaces {older_mid} and is shown first.{moved}"
        )

    async def unlink(self, newer_id: object, older_id: object) -> LinkResult:
        """Undo the link by which `newer` replaces `older`: both stay, unlinked."""
        newer_mid, older_mid = validation.memory_id(newer_id), validation.memory_id(older_id)
        async with self._io.changing.hold_all([newer_mid, older_mid]):
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
            await self._write_undo(older, found[newer_mid])
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


def names(memories: Sequence[StoredMemory]) -> set[str]:
    """The memories the links of `memories` name (themselves left out)."""
    own = {m.memory_id for m in memories}
    return {p for m in memories for p in (m.supersedes, m.superseded_by) if p and p not in own}


async def partners(io: StoreIO[MemoryStore], memories: Sequence[StoredMemory]) -> dict[str, StoredMemory]:
    """The stored memories linked to `memories` and not among them: one read of those their links
    name, and one scan without texts only when one of them replaced others (who it replaced is found
    there: `supersedes` names the latest only)."""
    gone = {m.memory_id for m in memories}
    ids = sorted(names(memories))
    found = dict(await io.read_in("background", MemoryStore.get, ids)) if ids else {}
    if any(m.supersedes for m in memories):
        for other in await io.read_in("background", MemoryStore.scan):
            if other.superseded_by in gone and other.memory_id not in gone:
                found.setdefault(other.memory_id, other)
    return found


def parted(memories: Sequence[StoredMemory], linked: dict[str, StoredMemory]) -> list[StoredMemory]:
    """Every record to write before `memories` go to the trash: the memories `linked` to them lose
    those links, so none points at nothing. Each memory going keeps its own links in the trash (a
    restore writes them again, `relink`), and one replacing another while replaced by none keeps
    in its own `link_kept` and `link_by` those of that link, which were on the other (its
    `link_kind` holds the kind already): undone, the link comes back as it was."""
    gone = {m.memory_id for m in memories}
    changed: list[StoredMemory] = []
    for m in memories:
        older = linked.get(m.supersedes or "")
        if older is not None and older.superseded_by == m.memory_id and not m.superseded_by:
            changed.append(replace(m, link_kind=older.link_kind, link_kept=older.link_kept, link_by=older.link_by))
    for partner in linked.values():
        if partner.superseded_by in gone:
            partner = _without_replacer(partner)
        if partner.supersedes in gone:
            partner = _without_replaced(partner)
        changed.append(partner)
    return changed


async def relink(io: StoreIO[MemoryStore], memory_ids: Sequence[str]) -> None:
    """After these memories came back from the trash with the links they had (`parted`): each link
    written on both ends again where the other end is stored and free to take it (a memory replaced
    by another meanwhile keeps that one; no cycle is made), taken off where not. Called holding
    these memories and the memories their links name."""
    current = dict(await io.read_in("background", MemoryStore.get, list(memory_ids)))
    current.update(await io.read_in("background", MemoryStore.get, sorted(names(list(current.values())))))

    async def get(ids: list[str]) -> dict[str, StoredMemory]:
        missing = [mid for mid in dict.fromkeys(ids) if mid not in current]
        found = dict(await io.read_in("background", MemoryStore.get, missing)) if missing else {}
        return {mid: current.get(mid) or found[mid] for mid in ids if mid in current or mid in found}

    for mid in memory_ids:
        if mid not in current:
            continue
        me = current[mid]
        if not me.supersedes and not me.superseded_by:
            continue
        # what the link by which it replaced `supersedes` was (kept on it by `parted`, when it could be)
        older_kind, older_kept, older_by = (
            (me.link_kind or "update", me.link_kept, me.link_by) if not me.superseded_by else ("update", False, None)
        )
        now = replace(without_links(me), link_by=None)
        changed: dict[str, StoredMemory] = {}
        first = current.get(me.superseded_by or "")
        if first is not None and first.memory_id != mid:
            try:
                await refuse_cycle(get, first, mid)
            except InvalidInputError:
                first = None
        if first is not None:
            linked_first, now = _linked(first, now, me.link_kind or "update", me.link_by)
            now = replace(now, link_kept=me.link_kept)
            if linked_first.supersedes != first.supersedes or linked_first.link_kind != first.link_kind:
                changed[first.memory_id] = linked_first
        older = current.get(me.supersedes or "")
        if older is not None and older.memory_id != mid and older.superseded_by in (None, mid):
            if older.superseded_by == mid:  # restored with it, the link on it as it was
                now = replace(now, supersedes=older.memory_id, link_kind=now.link_kind or older.link_kind)
            else:
                try:
                    await refuse_cycle(get, now, older.memory_id)
                    now, linked_older = _linked(now, older, older_kind, older_by)
                    changed[older.memory_id] = replace(linked_older, link_kept=older_kept)
                except InvalidInputError:
                    pass  # it would replace itself through others now: left unlinked
        changed[mid] = now
        await io.write(MemoryStore.set_links, list(changed.values()))
        current.update(changed)
