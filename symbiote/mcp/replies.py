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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from symbiote.memory import BatchStoreResult, History, Memory, MemoryList, MemoryPage, Turn

CONTENT_BYTES = 20_000  # the memories' texts in one reply, UTF-8: under 7,000 tokens even at 3 bytes a token
REPLY_BYTES = 30_000  # a whole reply, UTF-8: under 10,000 tokens even at 3 bytes a token
PART_MARKS = 48  # what showing a text by its part adds to it: "… ", " …" and `"content_chars":1234567,`
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
    """`result` as the tool's reply: its fields that are not empty, as data and as one line of JSON,
    within REPLY_BYTES: the texts share what the rest leaves, and a list still too long keeps its first
    items (a history its newest) and says what it left out (`_cut`)."""
    data = result.model_dump(mode="json", by_alias=True, exclude=_empty(result))
    query = data.get("query")
    texts = _texts(data)
    # What the texts may take: the reply's room once the rest is counted, less what a part adds (its
    # "…" marks and its whole length).
    room = REPLY_BYTES - _size(data) + sum(_size(holder[key]) - PART_MARKS for holder, key in texts)
    _fit(texts, query if isinstance(query, str) else "", min(CONTENT_BYTES, room))
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if type(result) in CUTS and len(text.encode()) > REPLY_BYTES:
        _cut(data, CUTS[type(result)])
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _size(data: Any) -> int:
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())


@dataclass(frozen=True)
class Cut:
    """How a reply's list is shortened: which field, whether its newest end is kept (a history, oldest
    first), and what the reply then says of what it left out."""

    field: str
    keep_end: bool
    say: Callable[[dict[str, Any], list[Any], list[int]], None]  # (reply, all its items, positions left out)


def _next_page(data: dict[str, Any], items: list[Any], left: list[int]) -> None:
    kept = data["memories"]
    data["count"] = len(kept)
    if kept:
        data["next_before"] = kept[-1]["memory_id"]  # the next page starts where this one stopped


def _not_shown_ids(data: dict[str, Any], items: list[Any], left: list[int]) -> None:
    data["not_shown"] = [items[at]["memory_id"] for at in left if items[at] is not None]


def _not_shown_items(data: dict[str, Any], items: list[Any], left: list[int]) -> None:
    data["not_shown"] = [at + 1 for at in left]  # items are counted from 1, as the errors name them


def _counted(data: dict[str, Any], items: list[Any], left: list[int]) -> None:
    data["count"] = len(data["turns"])


CUTS: dict[type[BaseModel], Cut] = {
    MemoryPage: Cut("memories", False, _next_page),
    MemoryList: Cut("memories", False, _not_shown_ids),
    BatchStoreResult: Cut("results", False, _not_shown_items),
    History: Cut("turns", True, _counted),  # oldest first: the newest turns are kept
}


def _cut(data: dict[str, Any], cut: Cut) -> None:
    """Drop items of `cut.field` from its far end until the reply, with what `say` adds, fits REPLY_BYTES."""
    items: list[Any] = data.get(cut.field, [])
    far_first = list(range(len(items))) if cut.keep_end else list(reversed(range(len(items))))
    sizes = [_size(item) + 1 for item in items]
    over = _size(data) - REPLY_BYTES
    left: set[int] = set()
    for at in far_first:
        if over <= 0:
            break
        over -= sizes[at]
        left.add(at)
        if over <= 0:  # what `say` adds may need one more item out
            data[cut.field] = [item for i, item in enumerate(items) if i not in left]
            cut.say(data, items, sorted(left))
            over = _size(data) - REPLY_BYTES


def page(memory: Memory, offset: int) -> Memory:
    """`memory` from character `offset` on, as much of its text as one reply's budget holds, with where
    the next part starts: get_memory's whole text, however long a memory the server was set to keep."""
    if offset == 0 and len(memory.content.encode()) <= CONTENT_BYTES:
        return memory
    shown, after = _window(memory.content, offset)
    return memory.model_copy(update={"content": shown, "content_chars": len(memory.content), "next_offset": after})


def page_turn(turn: Turn, offset: int) -> Turn:
    """`page` for one history turn's text."""
    if offset == 0 and len(turn.text.encode()) <= CONTENT_BYTES:
        return turn
    shown, after = _window(turn.text, offset)
    return turn.model_copy(update={"text": shown, "text_chars": len(turn.text), "next_offset": after})


def _window(whole: str, offset: int) -> tuple[str, int | None]:
    """The part of `whole` from `offset` within CONTENT_BYTES, and where the next starts (None: it ran to the end)."""
    shown = _within(whole[offset : offset + CONTENT_BYTES], CONTENT_BYTES) if offset < len(whole) else ""
    after = offset + len(shown)
    return shown, after if after < len(whole) else None


def share(count: int, budget: int = CONTENT_BYTES) -> int:
    """Each of `count` texts' share of `budget`, in UTF-8 bytes."""
    return max(MIN_PART_BYTES, budget // max(count, 1))


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


TEXT_KEYS = {"content": "content_chars", "text": "text_chars"}  # a memory's text, a history turn's


def _texts(data: Any) -> list[tuple[dict[str, Any], str]]:
    """Every memory-like object (a mapping with a `content` text, or a turn's `text`) in a reply, in
    order, with the key of its text."""
    if isinstance(data, dict):
        found = [(data, key) for key in TEXT_KEYS if isinstance(data.get(key), str)][:1]
        return found + [inner for value in data.values() for inner in _texts(value)]
    if isinstance(data, list):
        return [inner for value in data for inner in _texts(value)]
    return []


def _fit(texts: list[tuple[dict[str, Any], str]], query: str, budget: int = CONTENT_BYTES) -> None:
    each = share(len(texts), budget)
    for holder, key in texts:
        text = holder[key]
        if len(text.encode()) > each:
            holder[key] = part(text, query, each)
            holder.setdefault(TEXT_KEYS[key], len(text))


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
