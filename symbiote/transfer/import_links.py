"""An import's links between memories, checked together once every memory of the file is stored.

A line's `links` are a file's claims, and `superseded_by` puts another memory first in every
search that finds this one: a forged one could put an unrelated memory first. So memories are
written without the file's links (each keeps what the store already gave it), and at the end of
the file a link is kept only when both of its memories are then stored and agree: the replaced
one names the other in `superseded_by`, and that one names it in `supersedes` (or, replacing
several, names another it replaces, as `symbiote.memory.links` writes them), and only where the
store holds no other link in its place. The rest are dropped and counted. The links are written
last, each call holding both ends of every link in it, so an import killed at any point leaves no
link pointing at nothing and no half of a pair.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace

from symbiote.storage import StoredMemory

READ_BATCH = 250  # memories read at a time (their texts are let go of at once)
WRITE_BATCH = 500  # link records per write; a group of linked memories is never split
TAKEN = ("added", "updated", "replaced", "unchanged")  # outcomes where the file's copy is the one stored


@dataclass(frozen=True)
class Claim:
    """A memory's link fields: what a line of the file says, or what the store holds."""

    supersedes: str | None = None
    superseded_by: str | None = None
    kind: str | None = None  # its `superseded_by` link's kind, else its `supersedes` link's
    kept: bool = False  # the owner reviewed its `superseded_by` link


NO_LINKS = Claim()


def claim_of(memory: StoredMemory) -> Claim:
    return Claim(memory.supersedes, memory.superseded_by, memory.link_kind, memory.link_kept)


def with_claim(memory: StoredMemory, claim: Claim) -> StoredMemory:
    """`memory` carrying `claim` as its link fields."""
    return replace(
        memory,
        supersedes=claim.supersedes,
        superseded_by=claim.superseded_by,
        link_kind=claim.kind,
        link_kept=claim.kept and claim.superseded_by is not None,
    )


@dataclass
class LinkResult:
    """What the check decided: links taken from the file, the file's link fields dropped, and the
    writes (each a list of records holding whole groups of linked memories)."""

    added: int = 0
    dropped: int = 0
    writes: list[list[StoredMemory]] = field(default_factory=list)


Fetch = Callable[[list[str]], Awaitable[dict[str, StoredMemory]]]


class ImportLinks:
    """The file's link claims and where each of its memories ended up, then the check."""

    def __init__(self) -> None:
        self._claims: dict[str, Claim] = {}  # file ids whose lines carry links
        self._taken: dict[str, bool] = {}  # file ids stored after the import: whether as the file has them
        self._unstored = 0  # link fields claimed by lines never stored (a text repeated in the file)

    def claim(self, memory: StoredMemory) -> None:
        """A line's memory, with the links it claims (if any)."""
        claim = claim_of(memory)
        if claim != NO_LINKS:
            self._claims[memory.memory_id] = claim

    def unstored(self, memory: StoredMemory) -> None:
        """A line's memory that is not stored (its text came earlier in the file): its links are dropped."""
        self._unstored += (memory.supersedes is not None) + (memory.superseded_by is not None)

    def stored(self, memory_id: str, outcome: str, stored_id: str) -> None:
        """Where a line's memory ended up (`MemoryBulk.import_memories`'s outcome)."""
        if stored_id != memory_id:
            return  # its text is stored under another id: the file's id is nowhere
        self._taken[memory_id] = outcome in TAKEN

    async def resolve(self, fetch: Fetch) -> LinkResult:
        """Check every claim against the store as the import left it; nothing is written here."""
        if not self._claims:
            return LinkResult(dropped=self._unstored)
        named = {i for c in self._claims.values() for i in (c.supersedes, c.superseded_by) if i}
        stored = await _read(fetch, set(self._claims) | named)
        # the memories a stored partner already replaces (a group's other end, checked below)
        more = {m.supersedes for m in stored.values() if m.supersedes and m.supersedes not in stored}
        stored.update(await _read(fetch, more))
        check = _Check(self._claims, self._taken, stored)
        check.run()
        result = check.result()
        result.dropped += self._unstored
        return result


async def _read(fetch: Fetch, ids: Iterable[str]) -> dict[str, StoredMemory]:
    """Stored copies of `ids`, without their texts (only their links are used)."""
    wanted = sorted(ids)
    found: dict[str, StoredMemory] = {}
    for start in range(0, len(wanted), READ_BATCH):
        for mid, memory in (await fetch(wanted[start : start + READ_BATCH])).items():
            found[mid] = replace(memory, content="")
    return found


class _Check:
    """The check itself, over the claims and the stored copies, in three passes."""

    def __init__(self, claims: dict[str, Claim], taken: dict[str, bool], stored: dict[str, StoredMemory]) -> None:
        self.claims = claims
        self.taken = taken
        self.stored = stored
        self.by: dict[str, tuple[str, str | None, bool]] = {}  # x -> (replaced by, kind, kept) as it will be
        self.sup: dict[str, tuple[str, str | None]] = {}  # x -> (replaces, kind) as it will be
        for mid, memory in stored.items():
            if memory.superseded_by:
                self.by[mid] = (memory.superseded_by, memory.link_kind, memory.link_kept)
            if memory.supersedes:
                self.sup[mid] = (memory.supersedes, memory.link_kind)
        self.new_by: set[str] = set()
        self.new_sup: set[str] = set()

    def held(self, mid: str) -> bool:
        return mid in self.taken or mid in self.stored

    def claimed(self, mid: str) -> Claim | None:
        """A memory's claim in the file, when the file's copy is the one stored."""
        return self.claims.get(mid) if self.taken.get(mid) else None

    def says(self, mid: str, field: str) -> set[str]:
        """Whom `mid` names in `field`, in the file (its copy taken) or in the store."""
        named = {getattr(self.claimed(mid) or NO_LINKS, field)}
        if mid in self.stored:
            named.add(getattr(self.stored[mid], field))
        return {n for n in named if n}

    def acknowledges(self, first: str, replaced: str) -> bool:
        """Whether `first` agrees that it replaces `replaced`: it names it, or (its copy and its
        claim in the file) it names another memory that it replaces and that names it back."""
        if replaced in self.says(first, "supersedes"):
            return True
        claim = self.claimed(first)
        other = claim.supersedes if claim else None
        if other is None or other == replaced:
            return False
        return self.held(other) and first in self.says(other, "superseded_by")

    def run(self) -> None:
        for mid, claim in self.claims.items():
            target = claim.superseded_by
            if not self.taken.get(mid) or not target or mid in self.by:
                continue  # not the file's copy, nothing claimed, or the store's link stands
            if self.held(target) and self.acknowledges(target, mid):
                self.by[mid] = (target, claim.kind, claim.kept)
                self.new_by.add(mid)
        for mid, claim in self.claims.items():
            target = claim.supersedes
            if not self.taken.get(mid) or not target or mid in self.sup:
                continue
            if self.held(target) and self.by.get(target, ("",))[0] == mid:
                self.sup[mid] = (target, claim.kind)
                self.new_sup.add(mid)
        while self._unpaired():
            pass

    def _unpaired(self) -> bool:
        """Drop a new link its other end does not hold (after the passes above); True if one was."""
        for mid in list(self.new_by):
            first = self.by[mid][0]
            named = self.sup.get(first, ("",))[0]
            if named != mid and self.by.get(named, ("",))[0] != first:
                del self.by[mid]
                self.new_by.discard(mid)
                return True
        for mid in list(self.new_sup):
            if self.by.get(self.sup[mid][0], ("",))[0] != mid:
                del self.sup[mid]
                self.new_sup.discard(mid)
                return True
        return False

    def final(self, mid: str) -> Claim:
        by, sup = self.by.get(mid), self.sup.get(mid)
        kind = by[1] if by else sup[1] if sup else None
        return Claim(sup[0] if sup else None, by[0] if by else None, kind, by[2] if by else False)

    def result(self) -> LinkResult:
        dropped = 0
        for mid, claim in self.claims.items():
            final = self.final(mid) if self.held(mid) else NO_LINKS
            dropped += claim.supersedes is not None and final.supersedes != claim.supersedes
            dropped += claim.superseded_by is not None and final.superseded_by != claim.superseded_by
        changed = {
            mid: with_claim(memory, self.final(mid))
            for mid, memory in self.stored.items()
            if mid in self.new_by or mid in self.new_sup
        }
        return LinkResult(added=len(self.new_by), dropped=dropped, writes=_grouped(changed))


def _grouped(changed: dict[str, StoredMemory]) -> list[list[StoredMemory]]:
    """The records to write, in calls of at most WRITE_BATCH that never split linked memories."""
    parent = {mid: mid for mid in changed}

    def root(mid: str) -> str:
        while parent[mid] != mid:
            parent[mid] = parent[parent[mid]]
            mid = parent[mid]
        return mid

    for mid, memory in changed.items():
        for other in (memory.supersedes, memory.superseded_by):
            if other in parent:
                parent[root(mid)] = root(other)
    groups: dict[str, list[StoredMemory]] = {}
    for mid, memory in changed.items():
        groups.setdefault(root(mid), []).append(memory)
    writes: list[list[StoredMemory]] = []
    for group in groups.values():
        if writes and len(writes[-1]) + len(group) <= WRITE_BATCH:
            writes[-1].extend(group)
        else:
            writes.append(list(group))
    return writes
