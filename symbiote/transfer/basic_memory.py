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

import errno
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from symbiote.memory import iso_utc
from symbiote.telemetry.redaction import escape_controls
from symbiote.transfer.importing import SourceItem
from symbiote.transfer.knowledge_graph import OBSERVATION_TYPE, RELATION_TYPE, as_tags

ZIP_MAGIC = b"PK\x03\x04"
MAX_NOTE_BYTES = 4 * 1024 * 1024  # a note larger than this is refused unread
MAX_NOTES = 100_000
# Each line is read once, by string methods and regexes that cannot backtrack (no two quantifiers
# may share a character): a note of 4 MiB is read in linear time, whatever it holds.
_CATEGORY = re.compile(r"\[([^\[\]]+)\]\s+(\S.*)")
_TASK = re.compile(r"\[[ xX-]\]\s")
_TAG = re.compile(r"(?<!\S)#([^\s#]+)")
MAX_LINE_CHARS = 64 * 1024  # a list item longer than this is no observation: not read
_CLOSING = re.compile(r"^---[^\S\n]*$", re.MULTILINE)
_KEY = re.compile(r"^(title|permalink):([^\n]*)$", re.MULTILINE)
_ITEM_START = re.compile(r"^[^\S\n]*[-*+][^\S\n]+\S", re.MULTILINE)  # a list item's line begins here


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
    """The frontmatter's top-level `title` and `permalink` (all the import uses), and the body: the
    lines between a first line `---` and the next line `---`, found by searches that cannot backtrack."""
    first, newline, _rest = text.partition("\n")
    if first.rstrip() != "---" or not newline:
        return {}, text
    closing = _CLOSING.search(text, len(first))
    if closing is None:
        return {}, text  # no closing line: not frontmatter
    found = {key: _scalar(value) for key, value in _KEY.findall(text, len(first), closing.start()) if value.strip()}
    return found, text[closing.end() :].removeprefix("\n")


def _item(line: str) -> str | None:
    """A list item's text (`- text`, `* text`, `+ text`), or None when the line is not one."""
    stripped = line.strip()
    if len(stripped) < 3 or stripped[0] not in "-*+" or not stripped[1].isspace():
        return None
    return stripped[2:].lstrip()


def _relation(content: str) -> tuple[str, str] | None:
    """`relation_type [[Target]] (context)` as (relation_type, Target), or None."""
    start = content.find("[[")
    end = content.find("]]", start + 2)
    if start <= 0 or end < 0 or not content[start - 1].isspace():
        return None
    kind, target, after = content[:start].strip(), content[start + 2 : end].strip(), content[end + 2 :].strip()
    if not kind or not target or any(c in "[]" for c in kind + target):
        return None
    if after and not (after.startswith("(") and after.endswith(")")):
        return None
    return kind, target


def _observation(title: str, body: str) -> dict[str, Any] | None:
    """A list item's text as an observation's memory, or None when it is not one."""
    if _TASK.match(body) or body.startswith("[["):
        return None
    category = None
    match = _CATEGORY.fullmatch(body)
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
    common: dict[str, Any] = {}
    if isinstance(permalink, str) and permalink.strip():
        common["metadata"] = {"conversation_id": f"basic-memory:{permalink.strip()}"[:200]}
    number = first
    line_number, counted = offset + 1, 0
    for start in _ITEM_START.finditer(body):  # only the list items are looked at, however many lines
        line_number += body.count("\n", counted, start.start())
        counted = start.start()
        end = body.find("\n", counted)
        line = body[counted : end if end >= 0 else len(body)]
        content = _item(line) if len(line) <= MAX_LINE_CHARS else None
        if content is None:
            continue
        relation = _relation(content) if not content.startswith("[") else None
        record: dict[str, Any] | None
        if relation is not None:
            kind, target = relation
            record = {"content": f"{title} {kind} {target}", "tags": as_tags(title, target), "type": RELATION_TYPE}
        else:
            record = _observation(title, content)
            if record is not None:
                record["type"] = OBSERVATION_TYPE
        if record is not None:
            # The note's time, a microsecond apart in its order: each observation's own id (an import
            # makes it from the time and the text) and the note's order kept.
            created = iso_utc(modified_us + number - first)
            yield SourceItem(number, {**record, **common, "created": created}, where=f"{name} line {line_number}")
            number += 1


def _micros(stamp: float) -> int:
    return round(stamp * 1_000_000)


def _too_many(number: int) -> SourceItem:
    return SourceItem(number, refused=f"more than {MAX_NOTES:,} notes: the rest were not read")


def _read_regular(path: Path) -> tuple[bytes, float] | str:
    """A note's bytes (at most MAX_NOTE_BYTES + 1) and its modification time, or why it is not read:
    only a regular file is opened, never through a link, and never waited on (a pipe, a device)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a link (not followed, not read)"
        return f"cannot be opened ({exc.strerror})"
    with os.fdopen(descriptor, "rb") as stream:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            return "not a regular file (not read)"
        if found.st_size > MAX_NOTE_BYTES:
            return f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB (not read)"
        return stream.read(MAX_NOTE_BYTES + 1), found.st_mtime


def _notes(root: Path) -> list[Path]:
    """The folder's `.md` entries, sorted (at most MAX_NOTES + 1): hidden files and folders (such as
    basic-memory's own) skipped, links to folders never followed."""
    found: list[Path] = []
    for folder, folders, files in os.walk(root, followlinks=False):
        folders[:] = [name for name in folders if not name.startswith(".")]
        found += [Path(folder) / name for name in files if name.endswith(".md") and not name.startswith(".")]
        if len(found) > MAX_NOTES:
            break
    return sorted(found)[: MAX_NOTES + 1]


def folder_items(root: Path) -> Iterator[SourceItem]:
    """Every note under a folder; a link, a pipe or a device among them is refused, not read."""
    number = 1
    for count, path in enumerate(_notes(root)):
        if count == MAX_NOTES:
            yield _too_many(number)
            return
        name = path.relative_to(root).as_posix()
        read = _read_regular(path)
        if isinstance(read, str):
            yield SourceItem(number, refused=f"{name}: {read}")
            number += 1
            continue
        raw, modified = read
        for item in note_items(name, raw, _micros(modified), number):
            yield item
            number = item.number + 1


def zip_items(path: Path) -> Iterator[SourceItem]:
    """Every note in a .zip of the folder (how a folder reaches the console); an entry that cannot
    be read (encrypted, compressed in a way not read, damaged) is refused alone."""
    number = 1
    with zipfile.ZipFile(path) as archive:
        # zipfile cuts a name at a NUL byte (`filename`); the name as written (`orig_filename`)
        # still ends in .md, so such a note is refused by name rather than dropped unseen.
        entries = [
            e
            for e in archive.infolist()
            if e.orig_filename.endswith(".md") and not any(p.startswith(".") for p in e.orig_filename.split("/"))
        ]
        for count, entry in enumerate(sorted(entries, key=lambda e: e.orig_filename)):
            if count == MAX_NOTES:
                yield _too_many(number)
                return
            refused = _zip_refusal(entry)
            raw = b""
            if not refused:
                try:
                    with archive.open(entry) as stream:
                        raw = stream.read(MAX_NOTE_BYTES + 1)
                except (zipfile.BadZipFile, NotImplementedError, RuntimeError, zlib.error, EOFError) as exc:
                    refused = f"cannot be read ({type(exc).__name__})"
                if len(raw) > MAX_NOTE_BYTES:
                    refused = f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB (not read)"
            if refused:
                yield SourceItem(number, refused=f"{escape_controls(entry.orig_filename)}: {refused}")
                number += 1
                continue
            modified = datetime(*entry.date_time, tzinfo=UTC).timestamp()
            for item in note_items(entry.filename, raw, _micros(modified), number):
                yield item
                number = item.number + 1


def _zip_refusal(entry: zipfile.ZipInfo) -> str:
    if "\0" in entry.orig_filename:
        return "its name holds a NUL byte (not read)"
    if entry.flag_bits & 0x1:
        return "encrypted (not read)"
    if entry.file_size > MAX_NOTE_BYTES:
        return f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB (not read)"
    return ""


def file_items(path: Path) -> Iterator[SourceItem]:
    """One note on its own."""
    read = _read_regular(path)
    if isinstance(read, str):
        yield SourceItem(1, refused=f"{path.name}: {read}")
        return
    raw, modified = read
    yield from note_items(path.name, raw, _micros(modified), 1)
