"""Argument checks shared by every surface; each failure says what was wrong and what is allowed."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from symbiote.config import MAX_CONTENT_BYTES
from symbiote.errors import InvalidInputError
from symbiote.memory import timeparse
from symbiote.memory.clock import instant_us
from symbiote.memory.ids import created_us, is_memory_id
from symbiote.storage import MemoryFilter
from symbiote.storage import text as unicode_text

MAX_TAGS = 10  # besides OUTDATED
OUTDATED = "outdated"  # the owner's mark (the memory card's): every reply shows it; not one of the MAX_TAGS
MAX_TAGS_GIVEN = 100  # a longer list of tags is refused unread (duplicates count): no loop over millions
MAX_TAG_LENGTH = 50
MAX_CONVERSATION_ID = 200
MAX_QUERY_CHARS = 2_000  # a question, not a document: longer ones cost search time and find nothing more


def content(value: Any, max_bytes: int = MAX_CONTENT_BYTES) -> str:
    """The text of a memory, at most `max_bytes` in UTF-8 (SYMBIOTE_MAX_CONTENT_BYTES)."""
    if not isinstance(value, str):
        raise InvalidInputError("content must be text.")
    text = unicode_text.text(value, "content").strip()
    if not text:
        raise InvalidInputError("content is empty: give the text to remember.")
    size = len(text) if len(text) > max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidInputError(
            f"content is {'at least ' if len(text) > max_bytes else ''}{size:,} bytes; a memory holds at most "
            f"{max_bytes:,} bytes (SYMBIOTE_MAX_CONTENT_BYTES). Store the parts that matter as separate memories."
        )
    return text


def query(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInputError("query must be text.")
    text = unicode_text.text(value, "query").strip()
    if not text:
        raise InvalidInputError("query is empty: say what to look for, e.g. 'the user's favourite editor'.")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"query is {len(text):,} characters; at most {MAX_QUERY_CHARS:,} are searched. Ask with the words that matter."
        )
    return text


def tags(value: Any) -> list[str]:
    """At most 10 non-empty tags of at most 50 characters, and the owner's OUTDATED mark; duplicates
    (any case) dropped. The mark is not counted: the owner can mark any memory, however many tags it has."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InvalidInputError('tags must be a list of strings, e.g. ["work", "preferences"].')
    if len(value) > MAX_TAGS_GIVEN:  # counted before anything is read of them
        raise InvalidInputError(f"{len(value)} tags given; at most {MAX_TAGS} are allowed.")
    cleaned: list[str] = []
    seen: set[str] = set()
    for position, tag in enumerate(value, start=1):
        if not isinstance(tag, str):
            raise InvalidInputError(f"tag {position} is not text.")
        tag = unicode_text.name(tag, f"tag {position}").strip()
        if not tag:
            raise InvalidInputError(f"tag {position} is empty.")
        if len(tag) > MAX_TAG_LENGTH:
            raise InvalidInputError(f"tag {position} is {len(tag)} characters long; the limit is {MAX_TAG_LENGTH}.")
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            cleaned.append(tag)
    counted = sum(tag.casefold() != OUTDATED for tag in cleaned)
    if counted > MAX_TAGS:
        raise InvalidInputError(f"{counted} tags given; at most {MAX_TAGS} are allowed.")
    return cleaned


def marked(tags: Sequence[str], outdated: bool) -> list[str]:
    """`tags` with the OUTDATED mark put on or taken off, however it is spelled there."""
    kept = [tag for tag in tags if tag.casefold() != OUTDATED]
    return [*kept, OUTDATED] if outdated else kept


def limit(value: Any, *, name: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be a whole number from 1 to {high}.")
    if not 1 <= value <= high:
        raise InvalidInputError(f"{name} must be from 1 to {high} (got {value}).")
    return value


def memory_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("memory_id is empty: pass an id like 'mem_17321234567890120042'.")
    text: str = value.strip()
    if not is_memory_id(text):
        raise InvalidInputError(
            f"{text!r} is not a memory id (they look like 'mem_' followed by 20 digits); "
            "use search_memory or list_memories to find ids."
        )
    return text


def before(value: Any) -> int | None:
    """A paging cursor: a memory id or an ISO-8601 time. Returns microseconds since the epoch."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidInputError("before must be a memory id or an ISO-8601 date/time.")
    value = unicode_text.text(value, "before").strip()
    if is_memory_id(value):
        return created_us(value)
    try:
        return instant_us(value)
    except (ValueError, OverflowError):  # not a date, or one outside years 1 to 9999
        raise InvalidInputError(
            f"before={value!r} is neither a memory id nor an ISO-8601 date/time like '2026-11-21T09:30:00Z'."
        ) from None


def min_relevance(value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise InvalidInputError(f"min_relevance must be a number from 0 to 100 (got {value!r}).")
    return float(value)


def time_window(after: Any, before: Any, when: Any) -> tuple[int | None, int | None]:
    """Bounds in microseconds from `after`/`before` (moments) and `when` (a whole period).

    Each accepts an ISO date/time or a phrase ("yesterday", "last week", "in March"). A phrase
    given as `after` or `before` means the start of the period it names.
    """
    low: int | None = None
    high: int | None = None
    for name, value in (("after", after), ("before", before), ("when", when)):
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if not isinstance(value, str):
            raise InvalidInputError(f"{name} must be text: an ISO date or a phrase like 'last week'.")
        unicode_text.text(value, name)
        try:
            period = timeparse.parse(value)
        except timeparse.TimePhraseError as exc:
            raise InvalidInputError(f"{name}: {exc}") from None
        if name == "after":
            low = max(low or period.start_us, period.start_us)
        elif name == "before":
            high = min(high or period.start_us, period.start_us)
        else:
            low = max(low or period.start_us, period.start_us)
            high = min(high or period.end_us, period.end_us)
    if low is not None and high is not None and low >= high:
        raise InvalidInputError("The time filters leave no period to search (after is not before before).")
    return low, high


MAX_BATCH = 100
_TYPE = re.compile(r"^[a-z][a-z0-9_-]{0,29}$")


def memory_type(value: Any) -> str:
    """A short word: preference, fact, project, decision, personal, or any other."""
    if not isinstance(value, str) or not _TYPE.match(value.strip().lower()):
        raise InvalidInputError(
            "type must be one short word (letters, digits, - or _; at most 30), e.g. preference, fact, project, "
            "decision, personal."
        )
    return value.strip().lower()


def confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInputError(f"confidence must be a number from 0 to 1 (got {value!r}).")
    return float(value)


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false.")
    return value


def conversation_id(value: Any) -> str:
    """The client's id for a conversation: printable, so it can be shown and used in record ids."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("conversation_id is empty: pass the id your client uses for this conversation.")
    text: str = unicode_text.name(value, "conversation_id").strip()
    if len(text) > MAX_CONVERSATION_ID:
        raise InvalidInputError(
            f"conversation_id must be at most {MAX_CONVERSATION_ID} printable characters (got {len(text)})."
        )
    return text


def tag_mode(value: Any) -> Literal["any", "all"]:
    if value == "any":
        return "any"
    if value == "all":
        return "all"
    raise InvalidInputError("tag_mode must be 'any' (at least one tag) or 'all' (every tag).")


def memory_ids(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidInputError("memory_ids must be a non-empty list of ids.")
    if len(value) > MAX_BATCH:
        raise InvalidInputError(f"{len(value)} ids given; at most {MAX_BATCH} per call.")
    return [memory_id(v) for v in value]


MAX_REPLACES = 10  # older memories one memory stored may replace


def replaces(value: Any) -> list[str]:
    """store_memory's `replaces`: the ids of older memories the new one replaces (none when omitted)."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise InvalidInputError("replaces must be a list of memory ids, like ['mem_17321234567890120042'].")
    if len(value) > MAX_REPLACES:
        raise InvalidInputError(f"replaces names {len(value)} memories; at most {MAX_REPLACES}. Nothing was stored.")
    return list(dict.fromkeys(memory_id(v) for v in value))


def link_kind(value: Any) -> str:
    """link_memories' `kind`: an update (a new value) or a duplicate (the same fact, said again)."""
    if value not in ("update", "duplicate"):
        raise InvalidInputError(f"kind must be 'update' (a new value) or 'duplicate' (the same fact); got {value!r}.")
    return str(value)


def batch(value: Any) -> list[dict[str, Any]]:
    """store_memories items: 1..100 objects, each at least {"content": ...}."""
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidInputError("memories must be a non-empty list of {content, tags?, type?, confidence?} objects.")
    if len(value) > MAX_BATCH:
        raise InvalidInputError(f"{len(value)} memories given; at most {MAX_BATCH} per batch. Nothing was stored.")
    items = []
    for position, item in enumerate(value, start=1):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict):
            raise InvalidInputError(f"item {position} must be an object with a content field. Nothing was stored.")
        unknown = set(item) - {"content", "tags", "type", "confidence", "conversation_id", "bookmarked"}
        if unknown:
            raise InvalidInputError(f"item {position} has unknown fields {sorted(unknown)}. Nothing was stored.")
        items.append(item)
    return items


_tags, _tag_mode = tags, tag_mode  # memory_filter's arguments carry these names


def memory_filter(
    tags: Any = None,
    tag_mode: Any = "any",
    type: Any = None,
    min_confidence: Any = None,
    after_us: int | None = None,
    before_us: int | None = None,
) -> MemoryFilter:
    """The one builder of a MemoryFilter from what a caller gave (the search tool, the console), each
    part checked here, so a filter means the same wherever it is set. None leaves a part open."""
    return MemoryFilter(
        after_us=after_us,
        before_us=before_us,
        tags=tuple(_tags(tags)),
        tag_mode=_tag_mode(tag_mode),
        type=memory_type(type) if type is not None else None,
        min_confidence=confidence(min_confidence) if min_confidence is not None else None,
    )
