"""`search` and `fetch`: the two read-only tools ChatGPT deep research and company knowledge call.

ChatGPT's contract: `search(query)` returns `{"results": [{"id", "title", "url"}]}` and
`fetch(id)` returns `{"id", "title", "text", "url", "metadata"}`, each as structured content and
as the same JSON in the text content. Both are backed by the memory engine's own search and get;
`url` links to the memory on this server (`GET /memories/{id}`, behind the same authentication
as `/mcp`). The public origin those links start with comes from the caller (`OriginLookup`):
the HTTP app knows it from the auth gateway, and the MCP tools do not depend on auth.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse

from symbiote.errors import InvalidInputError, MemoryNotFoundError, SymbioteError
from symbiote.mcp.replies import page
from symbiote.mcp.tools import hints
from symbiote.memory import MemoryEngine, SearchRequest

log = logging.getLogger(__name__)
SEARCH_LIMIT = 10
TITLE_LENGTH = 80


class SearchResult(BaseModel):
    id: str = Field(description="The memory id; pass it to fetch.")
    title: str = Field(description="The start of the memory's text.")
    url: str = Field(description="A link to the memory on this server.")


class SearchOutput(BaseModel):
    results: list[SearchResult] = Field(description="Best match first; empty when nothing relevant is stored.")


class FetchOutput(BaseModel):
    id: str
    title: str
    text: str = Field(
        description="The memory's text; a long one's beginning, with content_chars and next_offset in metadata."
    )
    url: str
    metadata: dict[str, Any] = Field(
        description=(
            "When it was stored (ISO-8601 UTC) and its tags; for a long memory also content_chars (its whole "
            "length) and next_offset (where the rest starts, for get_memory's offset)."
        )
    )


OriginLookup = Callable[[], "str | None"]
"""The public origin (`https://host`) of the HTTP request being served; None over stdio, or for a Host
the server does not answer to."""


def no_origin() -> str | None:
    """The lookup where no HTTP request is served (stdio): links fall back to `memory://{id}`."""
    return None


def memory_url(memory_id: str, origin: str | None) -> str:
    return f"{origin}/memories/{memory_id}" if origin else f"memory://{memory_id}"


def title_of(content: str) -> str:
    line = " ".join(content.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def register_chatgpt_tools(server: MCPServer, engine: MemoryEngine, origin: OriginLookup = no_origin) -> None:
    """Add `search` and `fetch` to `server`; their `url`s start with what `origin` gives."""

    @server.tool(
        name="search",
        title="Search memories (ChatGPT)",
        description=(
            "Search the user's long-term memories by meaning and keywords. Returns up to 10 results, best "
            "first, each with an id to pass to `fetch` for the full text. Used by ChatGPT deep research and "
            "company knowledge; assistants that have `search_memory` should call that instead."
        ),
        annotations=hints("Search memories", read_only=True, idempotent=True),
    )
    async def search(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
    ) -> SearchOutput:
        try:
            found = await engine.search(SearchRequest(query, limit=SEARCH_LIMIT))
        except SymbioteError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:
            log.exception("search failed")
            raise ToolError("Internal error in the memory server; it has been logged. Try again shortly.") from exc
        base = origin()
        return SearchOutput(
            results=[
                SearchResult(id=hit.memory_id, title=title_of(hit.content), url=memory_url(hit.memory_id, base))
                for hit in found.results
            ]
        )

    @server.tool(
        name="fetch",
        title="Fetch memory (ChatGPT)",
        description=(
            "Fetch one memory's full text by the id that `search` returned, with when it was stored and its "
            "tags. A long memory comes as its beginning, with metadata.content_chars; the rest is at its url "
            "and, where the server offers it, from get_memory with metadata.next_offset as offset."
        ),
        annotations=hints("Fetch memory", read_only=True, idempotent=True),
    )
    async def fetch(
        id: Annotated[str, Field(description="A memory id from search, like 'mem_17321234567890120042'.")],
    ) -> FetchOutput:
        try:
            whole = await engine.get(id)
        except SymbioteError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:
            log.exception("fetch failed")
            raise ToolError("Internal error in the memory server; it has been logged. Try again shortly.") from exc
        memory = page(whole, 0)
        metadata: dict[str, Any] = {"timestamp": memory.timestamp, "tags": list(memory.tags)}
        if memory.content_chars is not None:
            metadata.update(content_chars=memory.content_chars, next_offset=memory.next_offset)
        return FetchOutput(
            id=memory.memory_id,
            title=title_of(whole.content),
            text=memory.content,
            url=memory_url(memory.memory_id, origin()),
            metadata=metadata,
        )


def memory_link_endpoint(engine: MemoryEngine, origin: OriginLookup = no_origin):  # type: ignore[no-untyped-def]
    """`GET /memories/{memory_id}`: the memory a `url` points at, as JSON (421 where `origin` gives None)."""

    async def memory_link(request: Request) -> JSONResponse:
        memory_id = request.path_params["memory_id"]
        base = origin()
        if base is None:  # a Host we do not answer to (DNS rebinding)
            return JSONResponse({"error": "Invalid Host header"}, status_code=421)
        try:
            memory = await engine.get(memory_id)
        except MemoryNotFoundError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except InvalidInputError as exc:  # not an id at all: the caller's mistake, not the store's
            return JSONResponse({"error": str(exc)}, status_code=400)
        except SymbioteError as exc:
            return JSONResponse({"error": str(exc)}, status_code=503)
        return JSONResponse(
            {**memory.model_dump(), "url": memory_url(memory.memory_id, base)}, headers={"Cache-Control": "no-store"}
        )

    return memory_link
