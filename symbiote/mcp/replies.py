"""What a tool's reply puts on the wire: its fields that say something, once as structured content and
once as compact JSON text, because the assistant pays for every token it reads.

A field that may be left out and says nothing (None, an empty list or mapping, a flag left false) is
left out; the output schema still names it, with its default, so a client that validates finds the
same object. A field with a value that says something (`match: "answer"`) stays, default or not. The SDK's own conversion
would send every field twice, the text indented.

The memories' texts in one reply share one budget (`CONTENT_BYTES`): a search over long notes would
otherwise fill an assistant's context in a few turns (eight notes of 17,000 characters made an
86,171-character reply at limit 5). A text past its share is shown by its part that holds the most of
the query's words (its beginning when none, or when there is no query), with `content_chars`, its whole
length; get_memory gives the whole, a budget at a time.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from symbiote.memory import Memory

CONTENT_BYTES = 20_000  # the memories' texts in one reply, UTF-8: under 7,000 tokens even at 3 bytes a token
MIN_PART_BYTES = 240  # a text's share never falls under this, however many memories a reply holds
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|(?<=[。！？；])|\n+")
_WORD = re.compile(r"\w{3,}")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{2,}")  # scripts written without spaces


def _terms(text: str) -> set[str]:
    """A text's words of three letters or more, and in scripts written without spaces its pairs of characters."""
    folded = text.casefold()
    pairs = {run[at : at + 2] for run in _UNSPACED.findall(folded) for at in range(len(run) - 1)}
    return {word for word in _WORD.findall(folded) if not _UNSPACED.fullmatch(word)} | pairs


def reply(result: BaseModel) -> CallToolResult:
    """`result` as the tool's reply: its fields that are not empty, as data and as one line of JSON."""
    data = result.model_dump(mode="json", by_alias=True, exclude=_empty(result))
    query = data.get("query")
    _fit(_texts(data), query if isinstance(query, str) else "")
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def page(memory: Memory, offset: int) -> Memory:
    """`memory` from character `offset` on, as much of its text as one reply's budget holds, with where
    the next part starts: get_memory's whole text, however long a memory the server was set to keep."""
    whole = memory.content
    if offset == 0 and len(whole.encode()) <= CONTENT_BYTES:
        return memory
    shown = _within(whole[offset : offset + CONTENT_BYTES], CONTENT_BYTES) if offset < len(whole) else ""
    after = offset + len(shown)
    return memory.model_copy(
        update={"content": shown, "content_chars": len(whole), "next_offset": after if after < len(whole) else None}
    )


def share(count: int) -> int:
    """Each of `count` texts' share of a reply's budget, in UTF-8 bytes."""
    return max(MIN_PART_BYTES, CONTENT_BYTES // max(count, 1))


def part(text: str, query: str, budget: int) -> str:
    """The run of whole sentences of `text`, within `budget` UTF-8 bytes, that holds the most of the
    query's words (each weighted by how rare it is among the text's sentences), marked "…" where it is cut; its
    beginning when no sentence holds one. A sentence longer than the budget is cut at a word."""
    pieces = [piece for piece in _SENTENCE_END.split(text) if piece]
    words = [_terms(piece) for piece in pieces]
    asked = _terms(query)
    counts = {word: sum(word in held for held in words) for word in asked}
    rarity = {word: math.log(len(pieces) / count) for word, count in counts.items() if count}
    weight = [sum(rarity[word] for word in held & asked if word in rarity) for held in words]
    sizes = [len(piece.encode()) + 1 for piece in pieces]
    best, best_score, end, used, score = 0, 0.0, 0, 0, 0.0
    for start in range(len(pieces)):  # two pointers: the widest run from each start within the budget
        while end < len(pieces) and used + sizes[end] <= budget:
            used, score, end = used + sizes[end], score + weight[end], end + 1
        if score > best_score:
            best, best_score = start, score
        if end > start:
            used, score = used - sizes[start], score - weight[start]
        else:
            end = start + 1
    if best_score:  # the run opens on the sentence that matched most, after the one before it
        window = range(best, len(_run(pieces, sizes, best, budget)) + best)
        best = max(max(window, key=lambda at: weight[at]) - 1, best)
    shown = " ".join(_within(piece, budget) for piece in _run(pieces, sizes, best, budget))
    return ("… " if best else "") + shown + (" …" if len(shown) < len(text) and not text.endswith(shown) else "")


def _run(pieces: list[str], sizes: list[int], start: int, budget: int) -> list[str]:
    taken: list[str] = []
    used = 0
    for piece, size in zip(pieces[start:], sizes[start:]):
        if taken and used + size > budget:
            break
        taken.append(piece)
        used += size
    return taken


def _within(piece: str, budget: int) -> str:
    """`piece` cut to `budget` UTF-8 bytes at the last space before it (never inside a character)."""
    if len(piece.encode()) <= budget:
        return piece
    cut = piece.encode()[:budget].decode(errors="ignore")
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def _texts(data: Any) -> list[dict[str, Any]]:
    """Every memory-like object (a mapping with a `content` text) in a reply, in order."""
    if isinstance(data, dict):
        found = [data] if isinstance(data.get("content"), str) else []
        return found + [inner for value in data.values() for inner in _texts(value)]
    if isinstance(data, list):
        return [inner for value in data for inner in _texts(value)]
    return []


def _fit(memories: list[dict[str, Any]], query: str) -> None:
    budget = share(len(memories))
    for memory in memories:
        content = memory["content"]
        if len(content.encode()) > budget:
            memory["content"] = part(content, query, budget)
            memory.setdefault("content_chars", len(content))


def _empty(model: BaseModel) -> dict[Any, Any]:
    """Pydantic's `exclude` for `model`: its optional fields that are empty, and theirs in the models it holds."""
    exclude: dict[Any, Any] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if not info.is_required() and (
            value is None
            or (isinstance(value, list | dict | tuple) and not value)
            or (value is False and info.default is False)
        ):
            exclude[name] = True
        elif isinstance(value, BaseModel):
            if inner := _empty(value):
                exclude[name] = inner
        elif isinstance(value, list):
            items = {
                i: inner for i, item in enumerate(value) if isinstance(item, BaseModel) and (inner := _empty(item))
            }
            if items:
                exclude[name] = items
    return exclude
