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
length; get_memory gives the whole, a budget at a time, each part at least one character long, so
paging by `next_offset` reaches the end of any text.

Every size is counted as the reply goes out (`text.sent_bytes`): its JSON with escapes, in the copy inside
the text content's string, where they are escaped twice; tags and every other field included. The
structured copy is never the larger, so the whole message is at most twice REPLY_BYTES. Both protocol
versions send the same JSON, but the SDK's 2026-07-28 transport writes it with `json.dumps`' default
`ensure_ascii` (`mcp/server/_streamable_http_modern.py`, `_write` and `_sse_event`): there every
character past ASCII goes out as a `\\uXXXX` escape (two for an emoji), up to three times its UTF-8.
The SDK offers no setting for it; the budget counts the UTF-8 that 2025-11-25 sends, which is also what
an assistant reads on either, once its client has decoded the message.
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

from symbiote.memory import BatchStoreResult, History, Memory, MemoryList, MemoryPage, SearchResults, Turn
from symbiote.storage import text as unicode_text

CONTENT_BYTES = 20_000  # the memories' texts in one reply, as sent: under 7,000 tokens even at 3 bytes a token
REPLY_BYTES = 30_000  # a whole reply, as sent: under 10,000 tokens even at 3 bytes a token
PART_MARKS = 48  # what showing a text by its part adds to it: "… ", " …" and `"content_chars":1234567,`
MIN_PART_BYTES = 240  # a text's share never falls under this, however many memories a reply holds
NEAR_WORD = 40  # a part cut short ends at a space within this many characters of the cut (a tenth of it if more)
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
    within REPLY_BYTES as sent (`fitted`)."""
    data, text = fitted(result)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def fitted(result: BaseModel) -> tuple[dict[str, Any], str]:
    """`result`'s fields that are not empty, and their JSON, within REPLY_BYTES as sent: the texts share
    what the rest leaves, and a list still too long keeps its first items (a history its newest) and
    says what it left out (`_cut`); the texts it kept then share the room the others left."""
    data = result.model_dump(mode="json", by_alias=True, exclude=_empty(result))
    asked = data.get("query")
    query = asked if isinstance(asked, str) else ""
    texts = _texts(data)
    whole = [(holder, key, holder[key], TEXT_KEYS[key] in holder) for holder, key in texts]
    _fit(texts, query, _room(data, texts))
    text = _json(data)
    cut = CUTS.get(type(result))
    if cut is not None and _sent(text) > REPLY_BYTES:
        _cut(data, cut)
        for holder, key, shown, counted in whole:
            holder[key] = shown
            if not counted:
                holder.pop(TEXT_KEYS[key], None)
        texts = _texts(data)
        _fit(texts, query, _room(data, texts))
        text = _json(data)
    return data, text


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _sent(text: str) -> int:
    """The bytes a reply's JSON `text` takes as sent: escaped again inside the text content's string."""
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


def _size(data: Any) -> int:
    return _sent(_json(data))


def _room(data: dict[str, Any], texts: list[tuple[dict[str, Any], str]]) -> int:
    """What `texts`, those of `data`, may take: the reply's room once the rest is counted, less what a
    part adds (its "…" marks and its whole length), at most CONTENT_BYTES."""
    room = REPLY_BYTES - _size(data) + sum(unicode_text.sent_bytes(holder[key]) - PART_MARKS for holder, key in texts)
    return min(CONTENT_BYTES, room)


@dataclass(frozen=True)
class Cut:
    """How a reply's list is shortened: which fields (read as one list, in order: a search's results,
    then those under the cut-off), whether its newest end is kept (a history, oldest first), and what
    the reply then says of what it left out."""

    fields: tuple[str, ...]
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


def _hits_not_shown(data: dict[str, Any], items: list[Any], left: list[int]) -> None:
    data["count"] = len(data["results"])
    _not_shown_ids(data, items, left)


CUTS: dict[type[BaseModel], Cut] = {
    MemoryPage: Cut(("memories",), False, _next_page),
    MemoryList: Cut(("memories",), False, _not_shown_ids),
    BatchStoreResult: Cut(("results",), False, _not_shown_items),
    History: Cut(("turns",), True, _counted),  # oldest first: the newest turns are kept
    SearchResults: Cut(("results", "below_cutoff"), False, _hits_not_shown),  # the lowest ranked go first
}


def _cut(data: dict[str, Any], cut: Cut) -> None:
    """Drop items of `cut.fields` from their far end until the reply, with what `say` adds, fits REPLY_BYTES."""
    lengths = [len(data.get(field, [])) for field in cut.fields]
    items: list[Any] = [item for field in cut.fields for item in data.get(field, [])]
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
            start = 0
            for field, length in zip(cut.fields, lengths):
                if field in data:
                    data[field] = [item for i, item in enumerate(items[start : start + length], start) if i not in left]
                start += length
            cut.say(data, items, sorted(left))
            over = _size(data) - REPLY_BYTES


def page(memory: Memory, offset: int) -> Memory:
    """`memory` from character `offset` on, as much of its text as one reply's budget holds, with where
    the next part starts: get_memory's whole text, however long a memory the server was set to keep."""
    if offset == 0 and unicode_text.sent_bytes(memory.content) <= CONTENT_BYTES:
        return memory
    shown, after = _window(memory.content, offset)
    return memory.model_copy(update={"content": shown, "content_chars": len(memory.content), "next_offset": after})


def page_turn(turn: Turn, offset: int) -> Turn:
    """`page` for one history turn's text."""
    if offset == 0 and unicode_text.sent_bytes(turn.text) <= CONTENT_BYTES:
        return turn
    shown, after = _window(turn.text, offset)
    return turn.model_copy(update={"text": shown, "text_chars": len(turn.text), "next_offset": after})


def _window(whole: str, offset: int) -> tuple[str, int | None]:
    """The part of `whole` from `offset` within CONTENT_BYTES, and where the next starts (None: it ran to
    the end). A part before the end holds at least one character, so paging always moves on."""
    shown = _within(whole[offset : offset + CONTENT_BYTES], CONTENT_BYTES) if offset < len(whole) else ""
    after = offset + len(shown)
    return shown, after if after < len(whole) else None


def share(count: int, budget: int = CONTENT_BYTES) -> int:
    """Each of `count` texts' share of `budget`, in bytes as sent."""
    return max(MIN_PART_BYTES, budget // max(count, 1))


def part(text: str, query: str, budget: int) -> str:
    """The run of whole sentences of `text`, within `budget` bytes as sent, that holds the most of the
    query's words (each weighted by how rare it is among the text's sentences), marked "…" where it is cut; its
    beginning when no sentence holds one. A sentence longer than the budget is cut at a word."""
    pieces = [piece for piece in _SENTENCE_END.split(text) if piece]
    words = [_terms(piece) for piece in pieces]
    asked = _terms(query)
    counts = {word: sum(word in held for held in words) for word in asked}
    rarity = {word: math.log(len(pieces) / count) for word, count in counts.items() if count}
    weight = [sum(rarity[word] for word in held & asked if word in rarity) for held in words]
    sizes = [unicode_text.sent_bytes(piece) + 1 for piece in pieces]
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
    """`piece` cut to `budget` bytes as sent, at the last space or line break near the cut when there is
    one past its first character, else between two characters: never empty while `budget` holds one."""
    cut = unicode_text.sent_prefix(piece, budget)
    if len(cut) == len(piece):
        return piece
    near = max(len(cut) - max(len(cut) // 10, NEAR_WORD), 1)
    space = max(cut.rfind(" ", near), cut.rfind("\n", near))
    return cut[:space] if space > 0 else cut


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
        if unicode_text.sent_bytes(text) > each:
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
