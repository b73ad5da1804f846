"""What `memory_stats` reports about the memories themselves: counts per type and tag, oldest, newest.

Counting needs a scan of every memory's metadata (and it queues behind writes on the store),
too slow to repeat while a client stores a batch. So one scan builds a `Summary` and this
instance's own writes keep it current; a rescan only catches up with what other instances
(sharing a Chroma server) wrote, in the background, every `max_age` seconds.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from symbiote.storage import StoredMemory


class Summary:
    """Counts over a set of memories' metadata, updated one memory at a time."""

    def __init__(self, heads: Iterable[StoredMemory], iso: Callable[[int], str]) -> None:
        self._iso = iso
        self._types: Counter[str] = Counter()
        self._tags: Counter[str] = Counter()
        self._stamps: Counter[int] = Counter()
        self.taken = time.monotonic()
        for memory in heads:
            self.add(memory)

    def add(self, memory: StoredMemory) -> None:
        self._types[memory.type or "untyped"] += 1
        self._tags.update(memory.tags)
        self._stamps[memory.created_us] += 1

    def remove(self, memory: StoredMemory) -> None:
        _drop(self._types, [memory.type or "untyped"])
        _drop(self._tags, list(memory.tags))
        _drop(self._stamps, [memory.created_us])

    def replace(self, old: StoredMemory, new: StoredMemory) -> None:
        self.remove(old)
        self.add(new)

    def age(self) -> float:
        return time.monotonic() - self.taken

    def tag_counts(self) -> dict[str, int]:
        """Every stored tag as it is spelled, most used first: the console's tag picker and filter."""
        return dict(sorted(self._tags.items(), key=lambda kv: (-kv[1], kv[0])))

    def report(self) -> dict[str, Any]:
        stamps = self._stamps.keys()
        return {
            "total_memories": sum(self._types.values()),
            "by_type": dict(sorted(self._types.items())),
            "top_tags": dict(sorted(self._tags.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
            "oldest_timestamp": self._iso(min(stamps)) if stamps else None,
            "newest_timestamp": self._iso(max(stamps)) if stamps else None,
        }


K = TypeVar("K")


def _drop(counter: Counter[K], keys: Iterable[K]) -> None:
    """One fewer of each key; a key counted down to nothing is gone (as if never counted)."""
    for key in keys:
        counter[key] -= 1
        if counter[key] <= 0:
            del counter[key]
