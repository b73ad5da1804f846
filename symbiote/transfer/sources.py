"""Which program a file to import comes from, told by what it holds, never by its name.

One entry for the command line and the console alike: a folder (basic-memory's notes), an SQLite
database (mcp-memory-service's), a .zip (a basic-memory folder, as a browser can send one), a
markdown note with frontmatter (one basic-memory note), a JSON document (mcp-memory-service's
export), or else JSON Lines (a Symbiote export or a knowledge graph's memory.jsonl), which refuses
any other file with the list of formats accepted. A pasted list is never guessed: it is asked for.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path

from symbiote.errors import InvalidInputError
from symbiote.memory import MemoryBulk, validation
from symbiote.transfer import basic_memory, memory_service
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.importing import (
    NOT_AN_EXPORT,
    Importer,
    NotAnExportError,
    SourceItem,
    TurnSink,
)
from symbiote.transfer.pasted import MAX_PASTED_BYTES, pasted_items
from symbiote.transfer.source_process import IDLE_SECONDS, read_source

HEAD_BYTES = 64


def _head(path: Path) -> bytes:
    with path.open("rb") as stream:
        return stream.read(HEAD_BYTES)


def _first_line_is_service_export(path: Path) -> bool | None:
    """Whether the file is a JSON document of mcp-memory-service's exporter: True, False, or None
    when its first line is itself a whole JSON value (JSON Lines)."""
    with path.open("rb") as stream:
        first = stream.readline(1024 * 1024)
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):
        return first.strip().startswith(b"{")  # a document spread over lines, as its exporter indents it
    return True if memory_service.is_memory_service_export(record) else None


class Source:
    """A file's memories as the importer takes them, and how its report names them."""

    def __init__(self, name: str, items: Iterator[SourceItem], unit: str = "line") -> None:
        self.name = name
        self.items = items
        self.unit = unit
        self.left_out: list[int] = []


def source_of(path: Path, max_bytes: int) -> Source | None:
    """The program `path` comes from and its memories, each text at most `max_bytes`; None for
    JSON Lines (the importer's own reading, which refuses a file that is none of the formats).
    Run by the reader's process (`symbiote.transfer.source_reader`), never by the server's."""
    if path.is_dir():
        return Source("basic-memory", basic_memory.folder_items(path))
    if not path.is_file():
        raise InvalidInputError(f"{path.name} is not a regular file, so nothing was imported.")
    head = _head(path)
    if head.startswith(memory_service.SQLITE_MAGIC):
        source = Source("memory-service", iter(()), unit="row")
        source.items = memory_service.database_items(path, source.left_out, max_bytes)
        return source
    if head.startswith(basic_memory.ZIP_MAGIC):
        if not zipfile.is_zipfile(path):
            raise NotAnExportError("This .zip cannot be read, so nothing was imported.")
        return Source("basic-memory", basic_memory.zip_items(path))
    if basic_memory.is_note(head):
        return Source("basic-memory", basic_memory.file_items(path))
    if _first_line_is_service_export(path):
        items = memory_service.export_items(path, max_bytes)
        if items is None:
            raise NotAnExportError(NOT_AN_EXPORT)
        return Source("memory-service", items, unit="entry")
    return None


async def import_path(
    bulk: MemoryBulk,
    path: Path,
    history: TurnSink | None = None,
    *,
    dry_run: bool = False,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    idle_seconds: float = IDLE_SECONDS,
) -> ImportReport:
    """Import a file or folder of any format Symbiote reads (see the module's docstring). Another
    program's file is read in a process of its own (`symbiote.transfer.source_process`)."""
    importer = Importer(bulk, history, dry_run=dry_run, replace_conflicts=replace, progress=progress)
    async with read_source(path, bulk.max_content_bytes, idle_seconds=idle_seconds) as source:
        if source is None:
            with path.open("rb") as stream:
                return await importer.run(stream)
        importer.report.source, importer.report.unit = source.name, source.unit
        report = await importer.run_items(source.items())
        report.left_out = source.left_out
        report.stopped = report.stopped or source.stopped or None
    if progress is not None and path.is_file():
        progress(path.stat().st_size)
    if report.lines == 0 and not report.refused_count and not report.left_out and not report.stopped:
        raise NotAnExportError(f"No memories were found in this {_what(source.name)}, so nothing was imported.")
    return report


def _what(name: str) -> str:
    return {"basic-memory": "basic-memory folder or note", "memory-service": "mcp-memory-service file"}.get(name, name)


async def import_text(bulk: MemoryBulk, text: str, tag: str, *, dry_run: bool = False) -> ImportReport:
    """Import a pasted list, each memory tagged `tag` (checked as a tag is)."""
    if len(text.encode("utf-8")) > MAX_PASTED_BYTES:
        raise InvalidInputError(
            f"A pasted list over {MAX_PASTED_BYTES // (1024 * 1024)} MiB is a file: save it and import it as one."
        )
    (tag,) = validation.tags([tag])
    importer = Importer(bulk, dry_run=dry_run)
    importer.report.source = "pasted"
    report = await importer.run_items(_each(pasted_items(text, tag)))
    if report.lines == 0:
        raise InvalidInputError("Nothing was pasted, so nothing was imported.")  # a bad input, not a file
    return report


async def _each(items: Iterable[SourceItem]) -> AsyncIterator[SourceItem]:
    for item in items:
        yield item
