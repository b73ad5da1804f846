"""Which memories a search may return: time, tags, type and confidence, in one value.

The store applies what its index can (Chroma `where` on the memory records, SQL on the
keyword index); the engine re-checks every resolved memory with `matches`, so a candidate
found through a passage or a keyword can never slip past a filter.
"""

from __future__ import annotations

from dataclasses import dataclass
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
                tag_clauses = [{"tags": {"$contains": tag}} for tag in self.tags]
                if len(tag_clauses) == 1:
                    clauses.append(tag_clauses[0])
                else:
                    clauses.append({"$or" if self.tag_mode == "any" else "$and": tag_clauses})
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
