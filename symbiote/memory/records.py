"""What the memory engine returns: plain pydantic models, so every surface gets a schema for free."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from symbiote.memory.clock import iso_utc
from symbiote.storage import StoredMemory

# Every reply that shows memories may show a long one's part (`symbiote.mcp.replies`): said once.
ContentChars = Annotated[
    int | None,
    Field(
        description="Set when `content` is only part of a long memory (the part that matched, or its "
        "beginning): the whole text's length in characters. get_memory gives the whole."
    ),
]


class Memory(BaseModel):
    """One stored memory."""

    memory_id: str = Field(description="Stable id, mem_<digits>; sorts by creation time.")
    content: str = Field(
        description="The text as stored; in a reply holding many memories, a long one's part (see content_chars)."
    )
    content_chars: ContentChars = None
    next_offset: int | None = Field(
        default=None,
        description="get_memory only, for a text longer than one reply: pass it as `offset` for the next part.",
    )
    timestamp: str = Field(description="When it was stored, ISO-8601 UTC.")
    tags: list[str] = Field(default_factory=list, description="Labels given when it was stored.")
    type: str | None = Field(
        default=None, description="Kind of memory: preference, fact, project, decision, personal..."
    )
    confidence: float | None = Field(default=None, description="How sure the writer was, 0-1 (when given).")
    bookmarked: bool = Field(default=False, description="Bookmarked memories are never removed by retention.")
    updated_at: str | None = Field(default=None, description="When it was last changed, ISO-8601 UTC.")
    supersedes: str | None = Field(
        default=None,
        description="The id of an older or shorter memory about the same thing that this one replaces "
        "(link_kind 'update': a new value; 'duplicate': the same fact, this one fuller). Show this one first.",
    )
    superseded_by: str | None = Field(
        default=None,
        description="The id of the memory that replaces this one: it may no longer be true. Prefer that one.",
    )
    link_kind: str | None = Field(
        default=None,
        description="Why the memories are linked, when supersedes or superseded_by is set: 'update' or 'duplicate'.",
    )


def public(memory: StoredMemory) -> Memory:
    """A stored memory as every surface shows it (no hash, no conversation, no internal times)."""
    return Memory(
        memory_id=memory.memory_id,
        content=memory.content,
        timestamp=memory.timestamp,
        tags=list(memory.tags),
        type=memory.type,
        confidence=memory.confidence,
        bookmarked=memory.bookmarked,
        updated_at=iso_utc(memory.updated_us) if memory.updated_us else None,
        supersedes=memory.supersedes,
        superseded_by=memory.superseded_by,
        link_kind=memory.link_kind,
    )


class SearchHit(Memory):
    """A memory found by a search, with how well it matched."""

    relevance_score: float = Field(
        ge=0,
        le=100,
        description=(
            "The chance, in percent, that this memory is relevant to the query: calibrated, so results scored "
            "80 are relevant about 80 times in 100, in a new store and a full one."
        ),
    )
    matched_by: Literal["semantic", "keyword", "both", "topic"] = Field(
        description=(
            "Why it matched: similar meaning, shared keywords (names, rare words), both, or 'topic' "
            "(it is the kind of memory a vague question like 'what am I working on?' asks about)."
        )
    )
    match: Literal["answer", "context"] = Field(
        default="answer",
        description=(
            "'answer': the server is sure it answers the question asked (more likely than not, on its own "
            "and among the others). 'context': the server is not sure; it may be standing context for the "
            "request (a preference, project, constraint or decision on its subject), the nearest memory "
            "about what a question names, or still the answer: read it and judge."
        ),
    )
    newer_note: str | None = Field(
        default=None,
        description=(
            "The id of a later memory in this reply that seems to answer the same question with another value "
            "(the server's guess, not a confirmed link): this one may be out of date. The later one is shown "
            "above it or in below_cutoff; say which is true now, and link_memories them if it replaces this one."
        ),
    )


class NearDuplicate(BaseModel):
    """An existing memory that says almost the same thing as the one just stored."""

    memory_id: str
    content: str
    content_chars: ContentChars = None
    similarity: float = Field(description="Cosine similarity, 0-1.")


class MayReplace(BaseModel):
    """An older memory that may hold an earlier value of what the new one says: the server is not
    sure, the assistant decides (link_memories, or store_memory's `replaces`)."""

    memory_id: str
    content: str
    content_chars: ContentChars = None
    similarity: float = Field(description="Cosine similarity to the new memory, 0-1.")


class StoreResult(BaseModel):
    """The outcome of storing one memory."""

    memory_id: str = Field(description="The new memory's id, or the existing one's when status is 'duplicate'.")
    timestamp: str
    tags: list[str] = Field(default_factory=list, description="The tags it was stored with.")
    status: Literal["stored", "duplicate"] = Field(
        description="'duplicate': identical content was already stored; nothing new was written."
    )
    near_duplicates: list[NearDuplicate] = Field(
        default_factory=list,
        description="Existing memories that say nearly the same thing; consider delete_memory on the stale one.",
    )
    warning: str | None = Field(default=None, description="Set when the store is at 90 % of its quota or more.")
    linked: str | None = Field(
        default=None,
        description="Set when the new memory was linked to an existing one about the same thing (linked_to): "
        "'supersedes': it replaces that one (a new value, or a fuller version); 'superseded_by': the existing "
        "one says more and is shown first. Both are kept.",
    )
    linked_to: str | None = Field(default=None, description="The existing memory it was linked to.")
    link_kind: str | None = Field(default=None, description="Why they were linked: 'update' or 'duplicate'.")
    replaced: list[str] = Field(
        default_factory=list, description="The older memories this one replaces, as `replaces` asked: linked."
    )
    may_replace: list[MayReplace] = Field(
        default_factory=list,
        description="Up to 3 older memories that may hold an earlier value of the same thing (nearest first), "
        "not linked. If this memory replaces one, call link_memories(newer_id=memory_id, older_id=..., "
        "kind='update'); otherwise ignore them. Empty when nothing stored is close.",
    )
    message: str


class LinkResult(BaseModel):
    """The outcome of link_memories or unlink_memories."""

    newer_id: str = Field(description="The memory shown first (it replaces the older one).")
    older_id: str = Field(description="The memory replaced: kept, marked superseded_by newer_id.")
    kind: str = Field(description="'update' (a new value) or 'duplicate' (the same fact, said again).")
    linked: bool = Field(description="True when the two are linked now; false after unlink_memories.")
    by: str = Field(description="Who made the link: 'server' (its own rule), 'assistant' or 'owner'.")
    message: str


class BatchStoreResult(BaseModel):
    """The outcome of store_memories: one result per item, in order."""

    results: list[StoreResult]
    stored: int
    duplicates: int
    not_shown: list[int] = Field(
        default_factory=list,
        description="Items (counted from 1) whose results this reply leaves out to stay under 10,000 tokens; "
        "stored and duplicates count them.",
    )
    warning: str | None = None
    message: str


class UpdateResult(BaseModel):
    memory: Memory
    reembedded: bool = Field(description="True when the content changed and was indexed again.")
    message: str


class RetentionResult(BaseModel):
    removed: int
    kept_bookmarked: int
    message: str


class MemoryList(BaseModel):
    """get_memories: the memories in the order asked, null where no memory has that id."""

    memories: list[Memory | None]
    found: int
    missing: list[str]
    not_shown: list[str] = Field(
        default_factory=list,
        description="Ids found but left out of this reply to keep it under 10,000 tokens: ask for them again.",
    )


class SearchResults(BaseModel):
    query: str
    results: list[SearchHit] = Field(description="Best first; matches under the cut-off are left out.")
    count: int
    message: str
    below_cutoff: list[SearchHit] = Field(
        default_factory=list,
        description=(
            "The candidates after `results`, each scored under the cut-off (its score is the server's own "
            "chance that it is relevant), best first (a request's: nearest in meaning first), so that `limit` "
            "memories are in view in all. Use any that plainly answers the question as asked, whatever its score."
        ),
    )
    not_shown: list[str] = Field(
        default_factory=list,
        description="Ids of the lowest-ranked hits left out of this reply to keep it under 10,000 tokens: "
        "get_memories gives them.",
    )


class DeleteResult(BaseModel):
    memory_id: str
    deleted: bool
    message: str


class MemoryPage(BaseModel):
    memories: list[Memory] = Field(description="Newest first.")
    count: int
    next_before: str | None = Field(
        default=None, description="Pass as `before` to get the next (older) page; null when there is none."
    )


class MemoryStats(BaseModel):
    total_memories: int
    by_type: dict[str, int] = Field(description="Memories per type ('untyped' when none was given).")
    collections: dict[str, int] = Field(
        description="Records per collection: memories, passages, keyword index; passages_queued: memories "
        "whose sentences are still to be indexed (a store's passages follow it within moments)."
    )
    oldest_timestamp: str | None
    newest_timestamp: str | None
    top_tags: dict[str, int] = Field(description="The most used tags and how many memories carry each.")
    storage_mb: float = Field(description="Size of the data directory on disk.")
    quota: int | None = Field(description="MAX_MEMORIES, or null when unlimited.")
    usage_percent: float | None = Field(description="Share of the quota in use, or null when unlimited.")
    retention_days: int | None = Field(description="RETENTION_DAYS, or null: memories are kept forever.")
    embedding_model: str
    embedding_dimension: int
    avg_store_ms: float | None = Field(description="Mean store latency since the server started.")
    avg_search_ms: float | None = Field(description="Mean search latency since the server started.")
    share: dict[str, Any] | None = Field(
        default=None,
        description="The file share holding the store (deployed on Azure): used_mb, quota_mb, percent_used, "
        "and a warning from 90 % of the quota. Null when the store is on a plain local disk.",
    )
