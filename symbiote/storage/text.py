"""What counts as text: the one rule every string meets before anything is acknowledged or journalled.

A Python string may hold lone surrogates (U+D800-U+DFFF): JSON's `\\ud800` escapes and
`surrogateescape` decoding make them, but they are not Unicode text. SQLite, Chroma's Rust core
and UTF-8 itself refuse them, so a memory holding one could be acknowledged and then never
written. Tags and ids are names shown in lists and used in filters: control and bidirectional
formatting characters are kept out of them as well (a name must look like what it is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from symbiote.errors import InvalidInputError

_NOT_TEXT = re.compile("[\ud800-\udfff]")
# C0 and C1 controls, DEL, and the bidirectional marks, embeddings, overrides and isolates.
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')  # what JSON escapes
_NOT_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def not_text_at(value: str) -> int | None:
    """The index of the first character that is not Unicode text (a lone surrogate), else None."""
    found = _NOT_TEXT.search(value)
    return found.start() if found is not None else None


def text(value: str, field: str) -> str:
    """`value` when it is Unicode text; else InvalidInputError naming `field` and the character."""
    at = not_text_at(value)
    if at is not None:
        raise InvalidInputError(
            f"{field} is not valid Unicode text: character {at + 1} is a lone surrogate "
            f"(U+{ord(value[at]):04X}), which cannot be stored. Send the text as UTF-8."
        )
    return value


def name(value: str, field: str) -> str:
    """`value` when it is text with no control or bidirectional formatting character (a tag, an id)."""
    text(value, field)
    found = _NOT_IN_NAMES.search(value)
    if found is not None:
        raise InvalidInputError(
            f"{field} holds a control or formatting character (U+{ord(found.group()):04X}) at character "
            f"{found.start() + 1}; names are printable text."
        )
    return value


def repaired(value: str) -> str:
    """`value` with each lone surrogate replaced by U+FFFD: what is shown and exported of a record
    an earlier release kept with text that is not Unicode."""
    return _NOT_TEXT.sub("\ufffd", value)


def printable(value: str) -> str:
    """`value` with each character a name may not hold (`name`) or that is not text replaced by U+FFFD:
    for what the server records of what a client says of itself (its name), never refused."""
    return _NOT_IN_NAMES.sub("\ufffd", repaired(value))


def first_not_text(value: Any, path: str = "") -> str | None:
    """Where in a decoded JSON value (keys included) the first string that is not text sits, as a
    path like `params.arguments.tags[0]`; None when every string is text."""
    for where, string in _strings(value, path):
        if not_text_at(string) is not None:
            return where or "the body"
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
                inner_path = f"{where}.{shown}" if where else shown
                yield inner_path, str(key)
                stack.append((inner_path, inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{index}]", inner) for index, inner in reversed(list(enumerate(item))))


def sent_bytes(value: str) -> int:
    """The bytes `value` takes in a tool's reply as it goes out: a reply is JSON sent as structured content
    and again as its JSON text inside a string, so a string's escapes are escaped twice there
    (`\\x01` is 7 bytes, a quote 4) and that copy is the larger. Raw UTF-8 undercounts a text of quotes,
    backslashes or control characters several times over."""
    if _ESCAPED.search(value) is None:  # most texts: nothing to escape, their UTF-8 goes out as it is
        return len(value.encode())
    once = json.dumps(value, ensure_ascii=False)[1:-1]
    return len(json.dumps(once, ensure_ascii=False).encode()) - 2


def sent_prefix(value: str, budget: int) -> str:
    """The longest start of `value` whose `sent_bytes` is within `budget` (never inside a character)."""
    if sent_bytes(value) <= budget:
        return value
    low, high = 0, min(len(value), max(budget, 0))  # every character takes at least one byte
    while low < high:
        middle = (low + high + 1) // 2
        if sent_bytes(value[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return value[:low]
