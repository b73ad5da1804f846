"""Links and offers for a batch (store_memories), as storing each item one by one would make them.

A batch is embedded in one pass and written in one call, so no item meets the store's
near-duplicate check of its own. Each item's nearest older memories are asked of the store before
the batch is written (whole texts only, as storing one memory sees them) and joined with the items
before it in the batch, by the vectors already at hand: a fact said twice in one batch, reworded,
is linked as it would be stored twice, and an older value is offered the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from symbiote.memory.links import NewLink, decide, offers
from symbiote.memory.store_io import StoreIO
from symbiote.storage import MemoryStore, StoredMemory


@dataclass(frozen=True)
class BatchLinks:
    """What linking a batch decided: each new memory's link and offers (by id), and every record
    whose links changed, to write in one `set_links` once the batch is stored."""

    links: dict[str, NewLink]
    offered: dict[str, list[tuple[StoredMemory, float]]]
    changed: list[StoredMemory]


async def nearest_older(io: StoreIO[MemoryStore], vectors: np.ndarray, near: int) -> list[list[tuple[str, float]]]:
    """Each vector's `near` closest stored memories (ids and cosines of their whole texts)."""
    found = []
    for row in vectors:
        matches = await io.read_in("background", MemoryStore.nearest, row, near, None, False)
        found.append([(m.memory_id, m.similarity) for m in matches])
    return found


async def link_batch(
    io: StoreIO[MemoryStore],
    memories: Sequence[StoredMemory],
    vectors: np.ndarray,
    stored_nearest: list[list[tuple[str, float]]],
    near: int,
) -> BatchLinks:
    """Decide, in batch order, the link and offers of each memory of a batch about to be written:
    against its nearest stored memories and the batch's earlier items, the `near` closest of them."""
    ids = list(dict.fromkeys(mid for row in stored_nearest for mid, _ in row))
    current: dict[str, StoredMemory] = dict(await io.read_in("background", MemoryStore.get, ids)) if ids else {}
    changed: set[str] = set()
    links: dict[str, NewLink] = {}
    offered: dict[str, list[tuple[StoredMemory, float]]] = {}
    for position, memory in enumerate(memories):
        await asyncio.sleep(0)  # each item's judging is a moment's work: requests are served between them
        pool = [(current[mid], cosine) for mid, cosine in stored_nearest[position] if mid in current]
        pool += [
            (current[earlier.memory_id], float(vectors[position] @ vectors[index]))
            for index, earlier in enumerate(memories[:position])
        ]
        pool = sorted(pool, key=lambda pair: -pair[1])[:near]
        current[memory.memory_id] = memory
        decided = decide(memory, pool)
        if decided is not None:
            link, pair = decided
            links[memory.memory_id] = link
            for record in pair:
                current[record.memory_id] = record
                changed.add(record.memory_id)
        linked = [links[memory.memory_id].other] if memory.memory_id in links else []
        offered[memory.memory_id] = offers(current[memory.memory_id], pool, linked)
    return BatchLinks(links=links, offered=offered, changed=[current[mid] for mid in changed])
