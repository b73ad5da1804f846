"""build_context: the prompt context for a new message, from the conversation's tail and the memories.

The result has two sections, memories first (best first), then the recent conversation (oldest
first, so it runs up to the new message, which the caller adds itself). It is cut to a token
budget: when everything does not fit, the conversation gets at least half of the budget (all of
it that the memories do not need), is filled from the newest turn backwards, and the memories
get what is left, best first. The item that crosses the limit is cut short (marked "…") and
nothing after it is kept, so the conversation kept is always the unbroken end of it.

Tokens are counted with the embedding model's own tokenizer (all-MiniLM-L6-v2's WordPiece,
uncased, the tokenizer.json beside the model). It is not the tokenizer of whichever LLM reads
the prompt, so the budget is an approximation of that model's count: for English prose
WordPiece gives about as many tokens as the GPT/Claude BPE tokenizers. Without the tokenizer
file it falls back to 4 characters per token.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from symbiote.errors import InvalidInputError
from symbiote.memory import validation
from symbiote.memory.history import ConversationHistory, Turn
from symbiote.memory.records import Memory, SearchResults
from symbiote.memory.requests import SearchRequest
from symbiote.storage import text as unicode_text

MIN_BUDGET = 64  # below this the section headers leave too little to be useful
MAX_BUDGET = 8_000  # the reply that carries the context stays under 10,000 of the reader's tokens
MAX_CONTEXT_BYTES = 24_000  # and its reply under 30,000 bytes as sent (escapes counted), whatever the text
MIN_PIECE = 8  # tokens: a piece shorter than this is not worth cutting an item down to
ELLIPSIS = " …"
MEMORY_HEADER = "Relevant memories (best first):"
HISTORY_HEADER = "Recent conversation (oldest first):"
ROLE_NAMES = {"user": "User", "assistant": "Assistant", "system": "System"}


class TokenCounter:
    """Counts and cuts text in tokens of the embedding model's tokenizer (or ~4 characters each)."""

    def __init__(self, tokenizer_file: Path | None) -> None:
        self._file = tokenizer_file
        self._tokenizer: Any = None
        self._loaded = False
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if not self._loaded:
                if self._file is not None and self._file.is_file():
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(self._file))
                    tokenizer.no_truncation()
                    tokenizer.no_padding()
                    self._tokenizer = tokenizer
                self._loaded = True
            return self._tokenizer

    @property
    def name(self) -> str:
        tokenizer = self._load()
        return "all-MiniLM-L6-v2 WordPiece" if tokenizer is not None else "approximate (4 characters per token)"

    def count(self, text: str) -> int:
        tokenizer = self._load()
        if tokenizer is None:
            return math.ceil(len(text) / 4)
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def cut(self, text: str, tokens: int) -> str:
        """`text` if it fits in `tokens`, else its start cut at a token boundary, ellipsis included."""
        if self.count(text) <= tokens:
            return text
        keep = max(tokens - self.count(ELLIPSIS), 0)
        tokenizer = self._load()
        if tokenizer is None:
            return text[: keep * 4].rstrip() + ELLIPSIS
        offsets = tokenizer.encode(text, add_special_tokens=False).offsets
        if keep >= len(offsets):
            return text
        end = offsets[keep - 1][1] if keep else 0
        return text[:end].rstrip() + ELLIPSIS


class BuiltContext(BaseModel):
    conversation_id: str
    context: str = Field(description="Ready to put in a prompt: the relevant memories, then the recent conversation.")
    token_count: int = Field(description="Tokens in `context`, counted by `tokenizer`.")
    token_budget: int
    tokenizer: str
    history_turns: list[int] = Field(description="turn_index of each turn included, oldest first.")
    history_available: int = Field(description="Turns in the conversation's tail that were considered.")
    memory_ids: list[str] = Field(description="Ids of the memories included, best first.")
    memories_found: int = Field(description="Relevant memories found before cutting to the budget.")
    truncated: bool = Field(description="True when something was left out or cut short to fit the budget.")
    note: str


def _date(timestamp: str) -> str:
    return timestamp[:10] if len(timestamp) >= 10 else timestamp


def memory_line(hit: Memory) -> str:
    details = [_date(hit.timestamp or "")]
    tags = list(hit.tags)
    if tags:
        details.append("tags: " + ", ".join(tags))
    details = [d for d in details if d]
    return f"- {hit.content}" + (f" ({'; '.join(details)})" if details else "")


def turn_line(turn: Turn) -> str:
    return f"{ROLE_NAMES.get(turn.role, turn.role)}: {turn.text}"


def _fill(counter: TokenCounter, header: str, items: Sequence[str], allowance: int) -> tuple[list[str], int, bool]:
    """Items in priority order that fit `allowance` with the header: (kept, tokens used, anything left out)."""
    remaining = allowance - counter.count(header)
    kept: list[str] = []
    left_out = False
    for item in items:
        cost = counter.count(item)
        if cost <= remaining:
            kept.append(item)
            remaining -= cost
            continue
        left_out = True
        if remaining >= MIN_PIECE:  # the item that crosses the limit is cut short, and nothing after it kept
            piece = counter.cut(item, remaining)
            kept.append(piece)
            remaining -= counter.count(piece)
        break
    if not kept:
        return [], 0, bool(items)
    return kept, allowance - remaining, left_out


def fit(
    counter: TokenCounter, memories: Sequence[str], turns_newest_first: Sequence[str], budget: int
) -> tuple[list[str], list[str], bool]:
    """Cut memory lines (best first) and turn lines (newest first) to `budget` tokens together."""
    memory_need = counter.count(MEMORY_HEADER) + sum(counter.count(m) for m in memories) if memories else 0
    memory_share = min(memory_need, budget // 2)
    turns, used, cut_turns = _fill(counter, HISTORY_HEADER, turns_newest_first, budget - memory_share)
    kept_memories, _, cut_memories = _fill(counter, MEMORY_HEADER, memories, budget - used)
    return kept_memories, turns, cut_turns or cut_memories


def compose(memories: Sequence[str], turns_newest_first: Sequence[str]) -> str:
    sections = []
    if memories:
        sections.append("\n".join([MEMORY_HEADER, *memories]))
    if turns_newest_first:
        sections.append("\n".join([HISTORY_HEADER, *reversed(turns_newest_first)]))
    return "\n\n".join(sections)


def fit_bytes(
    counter: TokenCounter, memories: Sequence[str], turns_newest_first: Sequence[str], budget: int
) -> tuple[list[str], list[str], str, bool]:
    """`fit`, then within MAX_CONTEXT_BYTES as sent (`text.sent_bytes`) too: where the tokens' text runs
    longer, the budget shrinks by how much it overran and the context is cut again (text of many bytes a
    token: digits, CJK, code, control characters a reply escapes)."""
    while True:
        kept_memories, kept_turns, truncated = fit(counter, memories, turns_newest_first, budget)
        text = compose(kept_memories, kept_turns)
        size = unicode_text.sent_bytes(text)
        if size <= MAX_CONTEXT_BYTES:
            return kept_memories, kept_turns, text, truncated
        if budget <= MIN_BUDGET:  # a few tokens of many bytes each (a long unbroken word is one [UNK])
            cut = unicode_text.sent_prefix(text, MAX_CONTEXT_BYTES - unicode_text.sent_bytes(ELLIPSIS))
            return kept_memories, kept_turns, cut + ELLIPSIS, True
        budget = max(MIN_BUDGET, min(budget - 1, budget * MAX_CONTEXT_BYTES // size))


class Searcher(Protocol):
    """What the builder needs of the memory engine: its search."""

    async def search(self, request: SearchRequest) -> SearchResults: ...


class ContextBuilder:
    """Builds the context for a message from one conversation's history and the memory engine's search."""

    def __init__(
        self,
        history: ConversationHistory,
        engine: Searcher,
        counter: TokenCounter,
        tail_n: int = 16,
        top_k: int = 8,
        budget: int = 2000,
    ) -> None:
        self._history = history
        self._engine = engine
        self._counter = counter
        self.tail_n = tail_n
        self.top_k = top_k
        self.budget = budget

    async def build(self, conversation_id: Any, message: Any, token_budget: Any = None) -> BuiltContext:
        cid = validation.conversation_id(conversation_id)
        if not isinstance(message, str) or not message.strip():
            raise InvalidInputError("message is empty: pass the new message the context is for.")
        unicode_text.text(message, "message")
        budget = self.budget if token_budget is None else token_budget
        if isinstance(budget, bool) or not isinstance(budget, int) or not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise InvalidInputError(
                f"token_budget must be a whole number from {MIN_BUDGET} to {MAX_BUDGET} (got {token_budget!r})."
            )
        tail, found = await asyncio.gather(
            self._history.get(cid, self.tail_n), self._engine.search(SearchRequest(message.strip(), limit=self.top_k))
        )
        hits = list(found.results)
        turns = list(tail.turns)
        memory_lines = [memory_line(hit) for hit in hits]
        turn_lines = [turn_line(t) for t in reversed(turns)]
        kept_memories, kept_turns, text, truncated = await asyncio.to_thread(
            fit_bytes, self._counter, memory_lines, turn_lines, budget
        )
        included_turns = [t.turn_index for t in turns[len(turns) - len(kept_turns) :]] if kept_turns else []
        included_memories = [hit.memory_id for hit in hits[: len(kept_memories)]]
        tokens = await asyncio.to_thread(self._counter.count, text)
        note = (
            f"{len(included_memories)} of {len(hits)} relevant memories and {len(included_turns)} of "
            f"{len(turns)} recent turns, {tokens} of {budget} tokens" + (" (cut to fit)." if truncated else ".")
        )
        return BuiltContext(
            conversation_id=cid,
            context=text,
            token_count=tokens,
            token_budget=budget,
            tokenizer=self._counter.name,
            history_turns=included_turns,
            history_available=len(turns),
            memory_ids=included_memories,
            memories_found=len(hits),
            truncated=truncated,
            note=note,
        )
