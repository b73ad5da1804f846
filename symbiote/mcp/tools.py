"""The MCP tools: thin adapters from tool calls to the memory engine.

Each tool has a description a model can act on, a typed schema, a structured result and
annotations. Engine errors become tool errors whose text is the engine's human message;
anything unexpected is logged here and reported without internals.
"""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from symbiote.errors import SymbioteError
from symbiote.mcp.replies import page, reply
from symbiote.memory import (
    ASSISTANT,
    CONSOLE,
    IMPORTED,
    UNKNOWN,
    BatchStoreResult,
    DeleteResult,
    LinkResult,
    Memory,
    MemoryEngine,
    MemoryList,
    MemoryPage,
    MemoryStats,
    SearchRequest,
    SearchResults,
    StoreRequest,
    StoreResult,
    UpdateRequest,
    UpdateResult,
    takes,
)

log = logging.getLogger(__name__)
R = TypeVar("R")
P = ParamSpec("P")


def hints(
    title: str, *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    """A tool's hints to the client, spelled the same for every tool: none reaches past the owner's own
    memory (a closed world), so only what it reads, destroys or repeats safely differs."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def readable_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R | CallToolResult]]:
    """Turn engine failures into tool errors a person can read, never a stack trace; and a result
    into its compact reply (`symbiote.mcp.replies`). The SDK reads `fn`'s signature through the
    wrapper, so the output schema stays the result's."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | CallToolResult:
        try:
            result = await fn(*args, **kwargs)
        except SymbioteError as exc:
            raise ToolError(str(exc)) from exc
        except ToolError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", fn.__name__)
            raise ToolError("Internal error in the memory server; it has been logged. Try again shortly.") from exc
        return reply(result) if isinstance(result, BaseModel) else result

    return wrapper


# The labels only the server writes: the owner's console, an import, no name at all.
OWNER_LABELS = frozenset({CONSOLE, IMPORTED, UNKNOWN})
SELF_DECLARED = " (self-declared)"
MAX_CLIENT_NAME = 100


def caller(ctx: Context | None) -> str | None:
    """What stores a memory, for the owner's statistics: the client's declared name (e.g.
    "claude-ai"), from its `initialize` or the 2026 protocol's envelope; on a stateless 2025 request,
    which carries neither, its User-Agent's product ("Claude-User/1.0 (...)" -> "Claude-User").
    Self-declared either way: a label, never an identity (`as_client_label`). None when there is neither."""
    if ctx is None:
        return None
    params = ctx.session.client_params
    if params is not None:
        return as_client_label(str(params.client_info.name))
    agent = (ctx.headers or {}).get("user-agent", "")
    return as_client_label(agent.split()[0].split("/")[0]) if agent.strip() else None


def as_client_label(name: str) -> str:
    """A client's declared name as stored: at most MAX_CLIENT_NAME characters, and marked
    self-declared when it reads as one of the server's own labels ("console", "Console ", "ｃｏｎｓｏｌｅ"),
    so that no MCP client passes for the owner's console or an import."""
    name = name[:MAX_CLIENT_NAME]
    folded = "".join(ch for ch in unicodedata.normalize("NFKC", name).casefold() if ch.isalnum())
    return f"{name}{SELF_DECLARED}" if folded in OWNER_LABELS else name


def register_tools(server: MCPServer, engine: MemoryEngine, view: dict[str, Any] | None = None) -> None:
    """Add the memory tools to `server`, all backed by `engine` (in this order in tools/list). `view`: the
    `_meta` naming the view that shows the result of storing, a search or a list (`symbiote.mcp.memory_card`)."""
    _register_storing(server, engine, view)
    _register_search(server, engine, view)
    _register_reading(server, engine)
    _register_editing(server, engine)
    _register_linking(server, engine)
    _register_browsing(server, engine, view)


# One item of store_memories as its schema names it: a client that converts schemas to strict mode
# (OpenAI's) needs every field typed and no other allowed. The engine checks each item itself
# (`symbiote.memory.validation.batch`, which also takes a bare string as the content), so a mistake
# gets its own message naming the item. (A comment, not a docstring: that would be published.)
class BatchItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str
    tags: list[str] | None = None
    type: str | None = None
    confidence: float | None = None
    conversation_id: str | None = None
    bookmarked: bool = False


BATCH_ITEMS = {"type": "array", "items": BatchItem.model_json_schema()}


def _register_storing(server: MCPServer, engine: MemoryEngine, view: dict[str, Any] | None) -> None:
    """store_memory and store_memories: the two ways in."""

    @server.tool(
        meta=view,
        title="Store memory",
        description=(
            "Save something worth remembering about the user across all their assistants: a preference, "
            "project, decision (with its reason), person, date or goal. Write one self-contained sentence "
            "that will make sense months later without context. Call it proactively, without being asked. "
            "Never store passwords or other secrets. Storing identical text again returns the existing "
            "memory (status 'duplicate'); near_duplicates lists memories that say nearly the same. "
            "When the fact is a new value of something already stored (a new city, job, coach, dose, plan), "
            "search_memory first and pass the old memory's id in `replaces`: it is kept, marked as replaced, "
            "and the new one is shown first. The result's may_replace lists older memories that may hold an "
            "earlier value of the same thing: if the new memory replaces one, call link_memories for it; "
            "otherwise ignore them."
        ),
        annotations=hints("Store memory"),
    )
    @readable_errors
    async def store_memory(
        content: Annotated[str, Field(description="The text to remember. Any length; long text is kept whole.")],
        tags: Annotated[
            list[str] | None,
            Field(description='Up to 10 short labels (each at most 50 characters), e.g. ["project-x", "preference"].'),
        ] = None,
        type: Annotated[
            str | None,
            Field(description="Kind of memory: preference, fact, project, decision, personal, or another word."),
        ] = None,
        confidence: Annotated[float | None, Field(description="How sure you are it is true and lasting, 0-1.")] = None,
        conversation_id: Annotated[
            str | None,
            Field(
                description="Set only when the memory is drawn from a conversation rather than asked for: then "
                "the write policy applies (confidence >= 0.7, at most 3 per conversation per hour)."
            ),
        ] = None,
        bookmarked: Annotated[bool, Field(description="Keep forever, even under a retention policy.")] = False,
        replaces: Annotated[
            list[str] | None,
            Field(
                description="Ids of older memories this one replaces (an earlier value of the same thing, found "
                "with search_memory first): they are kept, marked superseded_by this one, and shown after it."
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> StoreResult:
        request = StoreRequest(content, tags, type, confidence, conversation_id, bookmarked, caller(ctx), replaces)
        return await engine.store(request)

    @server.tool(
        meta=view,
        title="Store memories (batch)",
        description=(
            "Store several memories at once (up to 100), e.g. when importing notes or summarising a long "
            "conversation. All or nothing: if any item is invalid, none is stored and the error names the item. "
            "Identical content already stored is not copied (status 'duplicate')."
        ),
        annotations=hints("Store memories"),
    )
    @readable_errors
    async def store_memories(
        memories: Annotated[
            list[dict[str, Any]],
            WithJsonSchema(BATCH_ITEMS),
            Field(description="The memories, each with the fields store_memory takes."),
        ],
        ctx: Context | None = None,
    ) -> BatchStoreResult:
        return await engine.store_many(memories, caller(ctx))


def _register_search(server: MCPServer, engine: MemoryEngine, view: dict[str, Any] | None) -> None:
    """search_memory: the tool every answer starts with."""

    @server.tool(
        meta=view,
        title="Search memory",
        description=(
            "Find stored memories by meaning and by keywords. Call this FIRST, before answering any "
            "message, with the message as the person wrote it or the subject it is about (e.g. 'current "
            "projects', 'food preferences', or the names it mentions). results (best first), then "
            "below_cutoff, are the server's candidates, limit in all: relevance_score is the server's own chance in "
            "percent that a memory is relevant (calibrated: 80 means right about 80 times in 100), matched_by "
            "says why it matched, and match is 'answer' where the server is sure it answers the question asked, "
            "else 'context' (the server is not sure: a preference, project or constraint on the subject, or "
            "the nearest memory about what the question names). Memories scored under min_relevance (default "
            "30) go to below_cutoff. Read them all: use any that plainly answers the question as asked, "
            "whatever its score or mark; say something was never stored only when none of them does. "
            "A memory with superseded_by (replaced, by a link) or newer_note (the server's guess: a later "
            "memory about the same thing) has that later one shown above it or in below_cutoff: answer with "
            "what is true now. "
            "A long memory is shown by its part that matched, with content_chars (its whole length): call "
            "get_memory for the whole when the part is not enough. "
            "Narrow by time with after/before/when: ISO dates or phrases like 'yesterday', 'last week', 'in March'."
        ),
        annotations=hints("Search memory", read_only=True, idempotent=True),
    )
    @readable_errors
    @takes(SearchRequest)
    async def search_memory(**request: Any) -> SearchResults:
        return await engine.search(SearchRequest(**request))


def _register_reading(server: MCPServer, engine: MemoryEngine) -> None:
    """get_memory and get_memories: memories by id."""

    @server.tool(
        title="Get memory",
        description=(
            "Fetch one memory by its id (from search_memory or list_memories), with its tags and timestamp: its "
            "whole text, where other replies show a long memory's part (content_chars). A text longer than one "
            "reply comes in parts: pass next_offset as offset for the next."
        ),
        annotations=hints("Get memory", read_only=True, idempotent=True),
    )
    @readable_errors
    async def get_memory(
        memory_id: Annotated[str, Field(description="The id, like 'mem_17321234567890120042'.")],
        offset: Annotated[int, Field(ge=0, description="Where the text starts, in characters (next_offset).")] = 0,
    ) -> Memory:
        return page(await engine.get(memory_id), offset)

    @server.tool(
        title="Get memories",
        description="Fetch several memories by id in one call; the answer keeps your order, with null for unknown ids.",
        annotations=hints("Get memories", read_only=True, idempotent=True),
    )
    @readable_errors
    async def get_memories(
        memory_ids: Annotated[list[str], Field(description="Up to 100 ids.")],
    ) -> MemoryList:
        found = await engine.get_many(memory_ids)
        return MemoryList(
            memories=found,
            found=sum(m is not None for m in found),
            missing=[mid for mid, m in zip(memory_ids, found) if m is None],
        )


def _register_editing(server: MCPServer, engine: MemoryEngine) -> None:
    """update_memory and delete_memory: the only tools that change what is stored."""

    @server.tool(
        title="Update memory",
        description=(
            "Correct or refine a memory in place (same id, original timestamp kept, updated_at recorded): new "
            "content is re-indexed; tags, type, confidence and bookmarked can change on their own. Prefer this "
            "to storing a second, conflicting memory."
        ),
        annotations=hints("Update memory", destructive=True, idempotent=True),
    )
    @readable_errors
    async def update_memory(
        memory_id: Annotated[str, Field(description="The id of the memory to change.")],
        content: Annotated[str | None, Field(description="New text (omit to keep).")] = None,
        tags: Annotated[list[str] | None, Field(description="New tags, replacing the old ones (omit to keep).")] = None,
        type: Annotated[str | None, Field(description="New type (omit to keep).")] = None,
        confidence: Annotated[float | None, Field(description="New confidence 0-1 (omit to keep).")] = None,
        bookmarked: Annotated[bool | None, Field(description="Bookmark (keep forever) or not (omit to keep).")] = None,
    ) -> UpdateResult:
        return await engine.update(UpdateRequest(memory_id, content, tags, type, confidence, bookmarked))

    @server.tool(
        title="Delete memory",
        description=(
            "Delete one memory by id: no search or read finds it afterwards. Only when the user asks to forget "
            "something or a stored fact is wrong; find the id with search_memory first. Only the owner can "
            "restore it, from the console's trash."
        ),
        annotations=hints("Delete memory", destructive=True, idempotent=True),
    )
    @readable_errors
    async def delete_memory(
        memory_id: Annotated[str, Field(description="The id of the memory to delete.")],
    ) -> DeleteResult:
        return await engine.delete(memory_id)


def _register_linking(server: MCPServer, engine: MemoryEngine) -> None:
    """link_memories and unlink_memories: the assistant's word on what replaces what."""

    @server.tool(
        title="Link memories",
        description=(
            "Mark an older memory as replaced by a newer one about the same thing: kind 'update' (a new value: "
            "a new city, job, coach, dose) or 'duplicate' (the same fact said again). Both are kept; the newer "
            "is shown first and the older is marked superseded_by it. Use it for a store result's may_replace "
            "entry that the new memory does replace. The owner sees and can undo every link."
        ),
        annotations=hints("Link memories", idempotent=True),
    )
    @readable_errors
    async def link_memories(
        newer_id: Annotated[str, Field(description="The memory that holds the current value (shown first).")],
        older_id: Annotated[str, Field(description="The memory it replaces (kept, marked superseded_by).")],
        kind: Annotated[
            Literal["update", "duplicate"],
            Field(description="'update': a new value of the same thing; 'duplicate': the same fact said again."),
        ] = "update",
    ) -> LinkResult:
        return await engine.links.link(newer_id, older_id, kind, ASSISTANT)

    @server.tool(
        title="Unlink memories",
        description=(
            "Undo a link between two memories (made by link_memories, store_memory's replaces or the server): "
            "both stay, and neither replaces the other. For a link that was wrong."
        ),
        annotations=hints("Unlink memories"),
    )
    @readable_errors
    async def unlink_memories(
        newer_id: Annotated[str, Field(description="The memory shown first (its supersedes).")],
        older_id: Annotated[str, Field(description="The memory it replaced (its superseded_by is newer_id).")],
    ) -> LinkResult:
        return await engine.links.unlink(newer_id, older_id)


def _register_browsing(server: MCPServer, engine: MemoryEngine, view: dict[str, Any] | None) -> None:
    """list_memories and memory_stats: what is stored, without a question."""

    @server.tool(
        meta=view,
        title="List memories",
        description=(
            "List stored memories, newest first, a page at a time. For browsing or reviewing what is "
            "remembered; to answer a question, use search_memory instead. Pass the returned next_before "
            "as `before` to get the next, older page."
        ),
        annotations=hints("List memories", read_only=True, idempotent=True),
    )
    @readable_errors
    async def list_memories(
        limit: Annotated[int, Field(description="Page size, 1 to 50.")] = 10,
        before: Annotated[
            str | None,
            Field(description="Only memories older than this memory id or ISO-8601 time (paging cursor)."),
        ] = None,
    ) -> MemoryPage:
        return await engine.list_memories(limit, before)

    @server.tool(
        title="Memory statistics",
        description=(
            "How many memories are stored (per type and per collection), the oldest and newest, the most used "
            "tags, disk usage, quota usage and mean latency."
        ),
        annotations=hints("Memory statistics", read_only=True, idempotent=True),
    )
    @readable_errors
    async def memory_stats() -> MemoryStats:
        return await engine.stats()
