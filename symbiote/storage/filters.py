"""Which memories a search may return: time, tags, type and confidence, in one value.

The store applies what its index can (Chroma `where` on the memory records, SQL on the
keyword index); the engine re-checks every resolved memory with `matches`, so a candidate
found through a passage or a keyword can never slip past a filter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from symbiote.storage.base import StoredMemory


@dataclass(frozen=True)
class MemoryFilter:
    after_us: int | None = None
    before_us: int | None = None
    tags: tuple[str, ...] = ()
    tag_mode: Literal["any", "all"] = "any"
    type: str | None = None
    min_confidence: float | None = None
    # The stored tags spelled like a wanted one but for case: tags match whatever their case
    # (`matches` compares them case-folded), and Chroma's `$contains` compares exactly, so its
    # `where` names each spelling. Filled by `spelled` from the store's tags; what is stored keeps its case.
    spellings: tuple[str, ...] = ()

    def spelled(self, stored: Iterable[str]) -> MemoryFilter:
        """This filter naming every stored spelling of its tags, for the store's exact index."""
        if not self.tags:
            return self
        folded = {tag.casefold() for tag in self.tags}
        extra = tuple(tag for tag in dict.fromkeys(stored) if tag.casefold() in folded and tag not in self.tags)
        return replace(self, spellings=extra)

    def _tag_clause(self, tag: str) -> list[dict[str, Any]]:
        variants = [tag, *(s for s in self.spellings if s.casefold() == tag.casefold())]
        return [{"tags": {"$contains": variant}} for variant in variants]

    @property
    def empty(self) -> bool:
        return self == MemoryFilter()

    @property
    def by_time_only(self) -> bool:
        """Whether only the creation time limits it (what every stored record carries)."""
        return not self.tags and self.type is None and self.min_confidence is None

    def chroma_where(self, with_metadata: bool = True) -> dict[str, Any] | None:
        """The filter as a Chroma `where` (time only for records that carry nothing else)."""
        clauses: list[dict[str, Any]] = []
        if self.after_us is not None:
            clauses.append({"created_us": {"$gte": self.after_us}})
        if self.before_us is not None:
            clauses.append({"created_us": {"$lt": self.before_us}})
        if with_metadata:
            if self.tags:
                per_tag = [self._tag_clause(tag) for tag in self.tags]
                if self.tag_mode == "any":
                    per_tag = [[clause for group in per_tag for clause in group]]
                tag_clauses = [group[0] if len(group) == 1 else {"$or": group} for group in per_tag]
                clauses.append(tag_clauses[0] if len(tag_clauses) == 1 else {"$and": tag_clauses})
            if self.type is not None:
                clauses.append({"type": self.type})
            if self.min_confidence is not None:
                clauses.append({"confidence": {"$gte": self.min_confidence}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def matches(self, memory: StoredMemory) -> bool:
        if self.after_us is not None and memory.created_us < self.after_us:
            return False
        if self.before_us is not None and memory.created_us >= self.before_us:
            return False
        if self.tags:
            have = {t.casefold() for t in memory.tags}
            wanted = [t.casefold() for t in self.tags]
            if self.tag_mode == "all" and not all(t in have for t in wanted):
                return False
            if self.tag_mode == "any" and not any(t in have for t in wanted):
                return False
        if self.type is not None and memory.type != self.type:
            return False
        if self.min_confidence is not None and (memory.confidence is None or memory.confidence < self.min_confidence):
            return False
        return True
