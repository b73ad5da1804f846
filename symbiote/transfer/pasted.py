"""A pasted list of memories: what ChatGPT's "Manage memories" or Claude's memory shows, copied as text.

Those lists can only be copied, never exported, and arrive as one memory per line or per bullet
(`-`, `*`, `•`, `1.`, `1)`), sometimes under headings. Each line or bullet becomes one memory
tagged with the batch's tag, so the whole batch can be found, and undone, as one. A heading
(`# Work`, `**Work**`, `Work:`) is not a memory: it is reported as refused with its line number,
so nothing in the paste goes unaccounted for. A line indented under a bullet continues it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from symbiote.memory import MAX_TAG_LENGTH
from symbiote.transfer.importing import SourceItem

_BULLET = re.compile(r"^\s*(?:[-*+•·‣◦–—]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+.*|\*\*[^*]+\*\*:?|__[^_]+__:?|[^.!?]{1,60}:)\s*$")
MAX_PASTED_BYTES = 2 * 1024 * 1024  # a pasted list longer than this is a file: import it as one


@dataclass(frozen=True)
class PastedLine:
    """One memory of the paste (`text`), or a line that is not one (`refused` says why)."""

    number: int
    text: str = ""
    refused: str = ""


def batch_tag(at: float | None = None) -> str:
    """The default tag for one paste: `pasted-` and the minute it was made (UTC), unique enough to
    find and undo the batch, short enough to be a tag."""
    return time.strftime("pasted-%Y%m%d-%H%M", time.gmtime(at))[:MAX_TAG_LENGTH]


def pasted_lines(text: str) -> Iterator[PastedLine]:
    """The paste, one memory per line or bullet; blank lines skipped, headings refused."""
    current: PastedLine | None = None
    bulleted = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if current is not None:
                yield current
                current = None
            continue
        bullet = _BULLET.match(line)
        if bullet is None and current is not None and bulleted and line[:1].isspace():
            current = PastedLine(current.number, f"{current.text} {line.strip()}")  # a wrapped bullet
            continue
        if current is not None:
            yield current
            current = None
        body = line[bullet.end() :] if bullet else line
        body = " ".join(body.split())
        bulleted = bullet is not None
        if not bulleted and _HEADING.match(line):
            yield PastedLine(number, refused="a heading, not a memory")
            continue
        current = PastedLine(number, body)
    if current is not None:
        yield current


def pasted_items(text: str, tag: str) -> Iterator[SourceItem]:
    """The paste as memories of the import, each tagged with the batch's `tag`."""
    for line in pasted_lines(text):
        if line.refused:
            yield SourceItem(line.number, refused=line.refused)
        else:
            yield SourceItem(line.number, {"content": line.text, "tags": [tag]})
