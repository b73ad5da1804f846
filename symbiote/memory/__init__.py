"""The memory engine: what a memory is, the rules for storing and finding it, conversation history.

This is the package's door: other packages import from `symbiote.memory`, never from a module
inside it (tests/test_layers.py checks); tests/memory/ tests the modules themselves. Everything
here is imported at once: every package that uses the engine (the MCP tools, the console,
transfer, the runtime) loads it whole anyway, and nothing on the way to listening imports it.
`validation` is let out whole: every argument check, one rule for the tools, the console and imports.
"""

from symbiote.memory import validation
from symbiote.memory.bulk import FETCH_BATCH, IMPORTED, MemoryBulk
from symbiote.memory.clock import instant_us, iso_utc, now_us
from symbiote.memory.context import BuiltContext, ContextBuilder, TokenCounter
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.history import AppendResult, ConversationHistory, History, HistoryHit, Turn
from symbiote.memory.ids import created_us, is_memory_id
from symbiote.memory.records import (
    BatchStoreResult,
    DeleteResult,
    LinkResult,
    MayReplace,
    Memory,
    MemoryList,
    MemoryPage,
    MemoryStats,
    NearDuplicate,
    RetentionResult,
    SearchHit,
    SearchResults,
    StoreResult,
    UpdateResult,
)
from symbiote.memory.requests import SearchRequest, StoreRequest, UpdateRequest, takes
from symbiote.memory.statistics import CONSOLE, UNKNOWN, OwnerStats
from symbiote.memory.trash import ASSISTANT, CARD, OWNER, TRASH_DAYS, expires_us
from symbiote.memory.validation import MAX_TAG_LENGTH, MAX_TAGS
from symbiote.memory.write_policy import EnginePolicy, PolicyRefusedError, QuotaExceededError
from symbiote.retrieval.thresholds import RELEVANCE_CUTOFF

__all__ = [
    "ASSISTANT",
    "CARD",
    "CONSOLE",
    "FETCH_BATCH",
    "IMPORTED",
    "MAX_TAGS",
    "MAX_TAG_LENGTH",
    "OWNER",
    "RELEVANCE_CUTOFF",
    "TRASH_DAYS",
    "UNKNOWN",
    "AppendResult",
    "BatchStoreResult",
    "BuiltContext",
    "ContextBuilder",
    "ConversationHistory",
    "DeleteResult",
    "EnginePolicy",
    "History",
    "HistoryHit",
    "LinkResult",
    "MayReplace",
    "Memory",
    "MemoryBulk",
    "MemoryEngine",
    "MemoryList",
    "MemoryPage",
    "MemoryStats",
    "NearDuplicate",
    "OwnerStats",
    "PolicyRefusedError",
    "QuotaExceededError",
    "RetentionResult",
    "SearchHit",
    "SearchRequest",
    "SearchResults",
    "StoreRequest",
    "StoreResult",
    "Turn",
    "TokenCounter",
    "UpdateRequest",
    "UpdateResult",
    "created_us",
    "expires_us",
    "instant_us",
    "is_memory_id",
    "iso_utc",
    "now_us",
    "takes",
    "validation",
]
