"""What may be stored: the quota (MAX_MEMORIES) and the rule for memories drawn from a conversation.

Nothing is ever evicted to make room, so a full quota refuses the write and says how to free
space; an assistant writing memories on its own from a conversation must be confident and is
held to a few per window, so one chatty conversation cannot flood the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from symbiote.config import MAX_CONTENT_BYTES
from symbiote.errors import InvalidInputError, SymbioteError
from symbiote.memory.clock import now_us
from symbiote.memory.store_io import StoreIO
from symbiote.storage import MemoryStore, StoredMemory

log = logging.getLogger(__name__)

QUOTA_WARNING = 0.9


class QuotaExceededError(SymbioteError):
    """MAX_MEMORIES is reached; nothing is ever evicted to make room."""


class PolicyRefusedError(InvalidInputError):
    """The write policy for memories drawn from a conversation refused this one."""


@dataclass(frozen=True)
class EnginePolicy:
    """Limits and policy from configuration (MAX_MEMORIES, RETENTION_DAYS, MEMORY_*)."""

    max_memories: int | None = None
    retention_days: int | None = None
    confidence_min: float = 0.7
    max_per_window: int = 3
    window_minutes: int = 60
    max_content_bytes: int = MAX_CONTENT_BYTES  # SYMBIOTE_MAX_CONTENT_BYTES


async def check_conversation(policy: EnginePolicy, io: StoreIO[MemoryStore], draft: StoredMemory) -> None:
    """Memories drawn from a conversation (conversation_id given) must be confident and few."""
    if draft.conversation_id is None:
        return
    floor = policy.confidence_min
    if draft.confidence is None or draft.confidence < floor:
        raise PolicyRefusedError(
            f"Not stored: memories drawn from a conversation need confidence >= {floor:g} "
            f"(MEMORY_CONFIDENCE_MIN; got {draft.confidence}). Store it without conversation_id if the "
            "user asked for it explicitly."
        )
    since = now_us() - policy.window_minutes * 60 * 1_000_000
    recent = await io.read_in("background", MemoryStore.count_from, draft.conversation_id, since)
    if recent >= policy.max_per_window:
        raise PolicyRefusedError(
            f"Not stored: {recent} memories were already drawn from this conversation in the last "
            f"{policy.window_minutes} minutes (MEMORY_MAX_PER_WINDOW={policy.max_per_window}). "
            "Keep the most important ones; update_memory can refine them."
        )


async def check_quota(policy: EnginePolicy, io: StoreIO[MemoryStore], adding: int) -> str | None:
    """Refuse `adding` memories past MAX_MEMORIES; a warning to pass on from 90 % of it."""
    quota = policy.max_memories
    if quota is None or adding == 0:
        return None
    current = await io.read_in("background", MemoryStore.count)
    if current + adding > quota:
        raise QuotaExceededError(
            f"Memory quota reached: {current} of {quota} memories are stored (MAX_MEMORIES), so this was not "
            "saved. Nothing is ever deleted to make room: delete memories you no longer need, or raise "
            "MAX_MEMORIES."
        )
    if current + adding >= QUOTA_WARNING * quota:
        message = f"Warning: {current + adding} of {quota} memories used ({100 * (current + adding) / quota:.0f} %)."
        log.warning("memory quota: %s", message)
        return message
    return None
