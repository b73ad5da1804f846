"""The conversation history tools: append_history, get_history, build_context (docs/history.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from symbiote.errors import InvalidInputError
from symbiote.mcp.replies import page_turn
from symbiote.mcp.tools import hints, readable_errors
from symbiote.memory import AppendResult, BuiltContext, ContextBuilder, ConversationHistory, History


@dataclass
class HistoryServices:
    history: ConversationHistory
    context: ContextBuilder


def register_history_tools(server: MCPServer, services: HistoryServices) -> None:
    """Add the conversation history tools to `server`."""
    history, builder = services.history, services.context

    @server.tool(
        title="Append to conversation history",
        description=(
            "Record one turn of a conversation (what the user, the assistant or the system said) in the "
            "conversation history. History is kept apart from long-term memory: it is never returned by "
            "search_memory; store what must be remembered for good with store_memory. turn_index is assigned "
            "(last + 1, from 0) when omitted; appending the same turn again at the same index is harmless."
        ),
        annotations=hints("Append to conversation history"),
    )
    @readable_errors
    async def append_history(
        conversation_id: Annotated[
            str, Field(description="Your client's id for the conversation (any text, <= 200 chars).")
        ],
        role: Annotated[Literal["user", "assistant", "system"], Field(description="Who said it.")],
        text: Annotated[str, Field(description="What was said in this turn.")],
        turn_index: Annotated[
            int | None, Field(description="Position in the conversation (0 = first). Omit to append after the last.")
        ] = None,
        ts: Annotated[str | None, Field(description="When it was said, ISO-8601. Default: now.")] = None,
    ) -> AppendResult:
        return await history.append(conversation_id, role, text, turn_index, ts)

    @server.tool(
        title="Get conversation history",
        description=(
            "The last n turns of a conversation, oldest first (chronological order). An unknown "
            "conversation gives an empty list. To page back, pass the oldest turn_index you hold as before; "
            "a long turn comes as its part with text_chars: n=1, before=turn_index+1 and its next_offset as "
            "offset give the rest."
        ),
        annotations=hints("Get conversation history", read_only=True, idempotent=True),
    )
    @readable_errors
    async def get_history(
        conversation_id: Annotated[str, Field(description="The conversation's id, as given to append_history.")],
        n: Annotated[int, Field(description="How many of the most recent turns, 1 to 500.")] = 16,
        before: Annotated[
            int | None, Field(description="Only turns before this turn_index (to page back). Default: up to the last.")
        ] = None,
        offset: Annotated[
            int, Field(ge=0, description="With n=1: where the turn's text starts, in characters (next_offset).")
        ] = 0,
    ) -> History:
        if offset and n != 1:
            raise InvalidInputError("offset pages through one long turn: pass n=1 (and before=turn_index+1) with it.")
        found = await history.get(conversation_id, n, before)
        if n == 1 and found.turns:
            return found.model_copy(update={"turns": [page_turn(found.turns[0], offset)]})
        return found

    @server.tool(
        title="Build prompt context",
        description=(
            "Everything needed to answer a new message, in one call: the long-term memories most relevant to "
            "the message (best first) and the recent turns of this conversation (oldest first), formatted for a "
            f"prompt and cut to a token budget (default {builder.budget}; the newest turns and the best memories "
            "are kept). Put `context` before the new message in your prompt."
        ),
        annotations=hints("Build prompt context", read_only=True, idempotent=True),
    )
    @readable_errors
    async def build_context(
        conversation_id: Annotated[str, Field(description="The conversation's id, as given to append_history.")],
        message: Annotated[str, Field(description="The new message to build the context for.")],
        token_budget: Annotated[
            int | None,
            Field(description="Maximum tokens of context, 64 to 8000. Default: the server's CONTEXT_TOKEN_BUDGET."),
        ] = None,
    ) -> BuiltContext:
        return await builder.build(conversation_id, message, token_budget)
