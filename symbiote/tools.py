"""The MCP tools: thin adapters from tool calls to the memory engine.

Each tool has a description a model can act on, a typed schema, a structured result and
annotations. Engine errors become tool errors whose text is the engine's human message;
anything unexpected is logged here and reported without internals.
"""

from __future__ import annotations

import functools
import logging
from typing import Annotated, Any, Awaitable, Callable, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from symbiote.engine import MemoryEngine
from symbiote.errors import SymbioteError
from symbiote.records import DeleteResult, Memory, MemoryPage, MemoryStats, SearchResults, StoreResult

log = logging.getLogger(__name__)
R = TypeVar("R")


def _engine_errors(fn: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Turn engine failures into tool errors a person can read; never leak a stack trace."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> R:
        try:
            return await fn(*args, **kwargs)
        except SymbioteError as exc:
            raise ToolError(str(exc)) from exc
        except ToolError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", fn.__name__)
            raise ToolError("Internal error in the memory server; it has been logged. Try again shortly.") from exc

    return wrapper


def register_tools(server: MCPServer, engine: MemoryEngine) -> None:
    """Add the memory tools to `server`, all backed by `engine`."""

    @server.tool(
        title="Store memory",
        description=(
            "Save something worth remembering about the user across all their assistants: a preference, "
            "project, decision (with its reason), person, date or goal. Write one self-contained sentence "
            "that will make sense months later without context. Call it proactively, without being asked. "
            "Never store passwords or other secrets. Storing identical text again returns the existing "
            "memory (status 'duplicate'); near_duplicates lists memories that say nearly the same."
        ),
        annotations=ToolAnnotations(title="Store memory", readOnlyHint=False, destructiveHint=False, idempotentHint=False),
    )
    @_engine_errors
    async def store_memory(
        content: Annotated[str, Field(description="The text to remember. Any length; long text is kept whole.")],
        tags: Annotated[
            list[str] | None,
            Field(description="Up to 10 short labels (each at most 50 characters), e.g. [\"project-x\", \"preference\"]."),
        ] = None,
    ) -> StoreResult:
        return await engine.store(content, tags)

    @server.tool(
        title="Search memory",
        description=(
            "Find stored memories by meaning and by keywords. Call this FIRST, before answering any "
            "message, with the subject the message is about (e.g. 'current projects', 'food preferences', "
            "or the names it mentions). Results are best first; relevance_score estimates the chance (0-100) "
            "that a memory is what you asked about, and matched_by says why it matched. Results under "
            "min_relevance (default 30) are left out, so an empty list means nothing relevant is stored. "
            "Narrow by time with after/before/when: ISO dates or phrases like 'yesterday', 'last week', 'in March'."
        ),
        annotations=ToolAnnotations(title="Search memory", readOnlyHint=True, openWorldHint=False),
    )
    @_engine_errors
    async def search_memory(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        limit: Annotated[int, Field(description="Maximum number of results, 1 to 20.")] = 5,
        min_relevance: Annotated[
            float | None, Field(description="Leave out results scoring under this (0-100). Default 30.")
        ] = None,
        after: Annotated[
            str | None, Field(description="Only memories stored on or after this date/time or phrase start.")
        ] = None,
        before: Annotated[
            str | None, Field(description="Only memories stored before this date/time (or the start of a phrase).")
        ] = None,
        when: Annotated[
            str | None, Field(description="Only memories stored within this period, e.g. 'last week', 'yesterday'.")
        ] = None,
    ) -> SearchResults:
        return await engine.search(query, limit, min_relevance, after, before, when)

    @server.tool(
        title="Get memory",
        description="Fetch one memory by its id (from search_memory or list_memories), with its tags and timestamp.",
        annotations=ToolAnnotations(title="Get memory", readOnlyHint=True, openWorldHint=False),
    )
    @_engine_errors
    async def get_memory(
        memory_id: Annotated[str, Field(description="The id, like 'mem_17321234567890120042'.")],
    ) -> Memory:
        return await engine.get(memory_id)

    @server.tool(
        title="Delete memory",
        description=(
            "Permanently delete one memory by id. Only when the user asks to forget something or a stored "
            "fact is wrong; find the id with search_memory first. This cannot be undone."
        ),
        annotations=ToolAnnotations(title="Delete memory", readOnlyHint=False, destructiveHint=True, idempotentHint=True),
    )
    @_engine_errors
    async def delete_memory(
        memory_id: Annotated[str, Field(description="The id of the memory to delete.")],
    ) -> DeleteResult:
        return await engine.delete(memory_id)

    @server.tool(
        title="List memories",
        description=(
            "List stored memories, newest first, a page at a time. For browsing or reviewing what is "
            "remembered; to answer a question, use search_memory instead. Pass the returned next_before "
            "as `before` to get the next, older page."
        ),
        annotations=ToolAnnotations(title="List memories", readOnlyHint=True, openWorldHint=False),
    )
    @_engine_errors
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
        description="How many memories are stored, the oldest and newest, the most used tags, disk usage and latency.",
        annotations=ToolAnnotations(title="Memory statistics", readOnlyHint=True, openWorldHint=False),
    )
    @_engine_errors
    async def memory_stats() -> MemoryStats:
        return await engine.stats()
