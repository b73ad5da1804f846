"""basic-memory's notes: a folder of markdown files, each with frontmatter (title, type, permalink, tags).

basic-memory reads two kinds of list item in a note: an observation, `- [category] text #tag
(context)`, and a relation, `- relation_type [[Target]] (context)`. Each observation becomes one
memory, `"<title>: <text>"` (an observation alone, "Prefers a light roast", would not say what it is
about), type `fact`, tagged with its category, its `#tags` and the note's title; its context stays in
the text. Each relation becomes a memory `"<title> <relation_type> <Target>"`, type `relation`,
tagged with both ends, as the knowledge graph's relations do (`symbiote.transfer.knowledge_graph`).
The note's permalink goes in each memory's conversation field (`basic-memory:<permalink>`), so a
memory says which note it came from. A note's prose, its tasks (`- [ ]`) and plain bullets are
not observations, and are not imported. The texts are what identify a memory again: importing the
same folder twice adds nothing.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from symbiote.memory import iso_utc
from symbiote.transfer.importing import SourceItem
from symbiote.transfer.knowledge_graph import OBSERVATION_TYPE, RELATION_TYPE, as_tags

ZIP_MAGIC = b"PK\x03\x04"
MAX_NOTE_BYTES = 4 * 1024 * 1024  # a note larger than this is refused unread
MAX_NOTES = 100_000
_ITEM = re.compile(r"^\s*[-*+]\s+(.*\S)\s*$")
_CATEGORY = re.compile(r"^\[([^\[\]]+)\]\s+(.+)$")
_TASK = re.compile(r"^\[[ xX-]\]\s")
_RELATION = re.compile(r"^([^\[\]]+?)\s+\[\[([^\[\]]+)\]\](?:\s*\((.*)\))?$")
_TAG = re.compile(r"(?<!\S)#([^\s#]+)")
_FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)


def is_note(head: bytes) -> bool:
    """Whether a file's first bytes are those of a basic-memory note (YAML frontmatter)."""
    return head.lstrip(b"\xef\xbb\xbf").startswith(b"---")


def _scalar(value: str) -> str:
    """A YAML scalar as basic-memory writes one: plain, or quoted when it holds `:` or `#`."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def _frontmatter(text: str) -> tuple[dict[str, str], str]:
    """The frontmatter's top-level `title` and `permalink` (all the import uses), and the body."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return {}, text
    found = {}
    for line in match.group(1).splitlines():
        key, colon, value = line.partition(":")
        if colon and key in ("title", "permalink") and value.strip():
            found[key] = _scalar(value)
    return found, text[match.end() :]


def _observation(title: str, body: str) -> dict[str, Any] | None:
    """A list item's text as an observation's memory, or None when it is not one."""
    if _TASK.match(body) or body.startswith("[["):
        return None
    category = None
    match = _CATEGORY.match(body)
    if match:
        category, body = match.group(1).strip(), match.group(2).strip()
    tags = _TAG.findall(body)
    if category is None and not tags:
        return None  # a plain bullet: basic-memory does not read it as an observation either
    text = " ".join(_TAG.sub("", body).split())
    if not text:
        return None
    return {"content": f"{title}: {text}", "tags": as_tags(*([category] if category else []), *tags, title)}


def note_items(name: str, raw: bytes, modified_us: int, first: int) -> Iterator[SourceItem]:
    """The memories of one note; items are numbered from `first` (across the folder), refusals say
    the file and its line."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        yield SourceItem(first, refused=f"{name}: not text (not UTF-8)")
        return
    meta, body = _frontmatter(text)
    offset = text[: len(text) - len(body)].count("\n")
    title = str(meta.get("title") or Path(name).stem).strip()
    permalink = meta.get("permalink")
    common: dict[str, Any] = {"created": iso_utc(modified_us)}
    if isinstance(permalink, str) and permalink.strip():
        common["metadata"] = {"conversation_id": f"basic-memory:{permalink.strip()}"[:200]}
    number = first
    for line_number, line in enumerate(body.splitlines(), start=offset + 1):
        item = _ITEM.match(line)
        if item is None:
            continue
        content = item.group(1)
        relation = _RELATION.match(content)
        record: dict[str, Any] | None
        if relation and not content.startswith("["):
            kind, target = relation.group(1).strip(), relation.group(2).strip()
            record = {"content": f"{title} {kind} {target}", "tags": as_tags(title, target), "type": RELATION_TYPE}
        else:
            record = _observation(title, content)
            if record is not None:
                record["type"] = OBSERVATION_TYPE
        if record is not None:
            yield SourceItem(number, {**record, **common}, where=f"{name} line {line_number}")
            number += 1


def _micros(stamp: float) -> int:
    return round(stamp * 1_000_000)


def folder_items(root: Path) -> Iterator[SourceItem]:
    """Every note under a folder (hidden files and folders, such as basic-memory's own, skipped)."""
    number = 1
    notes = sorted(p for p in root.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(root).parts))
    for path in notes[:MAX_NOTES]:
        name = path.relative_to(root).as_posix()
        size = path.stat().st_size
        if size > MAX_NOTE_BYTES:
            yield SourceItem(number, refused=f"{name}: larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB (not read)")
            number += 1
            continue
        for item in note_items(name, path.read_bytes(), _micros(path.stat().st_mtime), number):
            yield item
            number = item.number + 1


def zip_items(path: Path) -> Iterator[SourceItem]:
    """Every note in a .zip of the folder (how a folder reaches the console)."""
    number = 1
    with zipfile.ZipFile(path) as archive:
        entries = [
            e
            for e in archive.infolist()
            if e.filename.endswith(".md") and not any(p.startswith(".") for p in e.filename.split("/"))
        ]
        for entry in sorted(entries, key=lambda e: e.filename)[:MAX_NOTES]:
            if entry.file_size > MAX_NOTE_BYTES:
                yield SourceItem(number, refused=f"{entry.filename}: larger than 4 MiB (not read)")
                number += 1
                continue
            modified = datetime(*entry.date_time, tzinfo=UTC).timestamp()
            with archive.open(entry) as stream:
                raw = stream.read(MAX_NOTE_BYTES + 1)
            for item in note_items(entry.filename, raw, _micros(modified), number):
                yield item
                number = item.number + 1


def file_items(path: Path) -> Iterator[SourceItem]:
    """One note on its own."""
    with path.open("rb") as stream:
        raw = stream.read(MAX_NOTE_BYTES + 1)
    if len(raw) > MAX_NOTE_BYTES:
        yield SourceItem(1, refused=f"{path.name}: larger than 4 MiB (not read)")
        return
    yield from note_items(path.name, raw, _micros(path.stat().st_mtime), 1)
