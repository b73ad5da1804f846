"""Reading an import: a Symbiote export, or the reference MCP memory server's knowledge graph, or
records another program's memories became (`run_items`, fed by `symbiote.transfer.sources`).

Line by line (each at most `line_cap`, `symbiote.transfer.lines`), a batch at a time, each text
held to SYMBIOTE_MAX_CONTENT_BYTES as configured, as the tools hold it. Each memory keeps its id and times and is compared with what is stored (`MemoryBulk.import_memories`),
so importing the same file twice adds nothing; a stored memory whose text differs is a conflict,
reported and left as it is unless the owner asks to replace. A line that cannot be taken (not
JSON, too long, nested too deeply, a field of the wrong type or out of range, a time in the
future, an id seen earlier in the file) is refused with its line number and the rest goes on;
the event loop gets a turn every few milliseconds however many lines are refused. Every batch is
written all or nothing, so a failure of the store (a full disk, the quota) stops the import
between batches, with nothing half-written and nothing already stored touched. The file's links
between memories are checked and written last (`symbiote.transfer.import_links`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING, Any, Protocol

from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.errors import SymbioteError
from symbiote.memory import MemoryBulk, now_us
from symbiote.storage import StoredMemory
from symbiote.transfer.export_format import (
    IncomingMemory,
    LineError,
    is_header,
    read_header,
    read_memory,
)
from symbiote.transfer.import_links import NO_LINKS, ImportLinks, claim_of, with_claim
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.knowledge_graph import graph_memories, is_graph_line
from symbiote.transfer.lines import line_cap, read_lines

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

BATCH = 250  # memories per write (one embedding pass, one all-or-nothing store call)
YIELD_SECONDS = 0.02  # the longest an import holds the event loop between two turns for everyone else


FORMATS = (
    "a Symbiote export (.jsonl), the MCP memory server's memory.jsonl, an mcp-memory-service database "
    "(its sqlite_vec .db file) or JSON export, a basic-memory folder of notes (or a .zip of it, or one .md note), "
    "or a pasted list of memories (one per line)"
)
NOT_AN_EXPORT = f"This file is none of the formats Symbiote imports, so nothing was imported. It imports {FORMATS}."
EMPTY_FILE = "This file is empty, so nothing was imported."


class NotAnExportError(SymbioteError):
    """The file is not one Symbiote imports (its first line says so): refused whole, nothing written."""


@dataclass(frozen=True)
class SourceItem:
    """One memory another program's file became, as a memory record of the export format, or (with
    `refused`) why its line, row or entry could not become one."""

    number: int  # the line, row or entry it came from (counted from 1)
    record: dict[str, Any] | None = None
    refused: str = ""
    where: str = ""  # said before a refusal's reason (a note's file and line)
    count: int = 1  # a refusal for this many in a row (numbered from `number`), for the same reason


class TurnSink(Protocol):
    """Where imported conversation turns go: `ConversationHistory.append` (idempotent per index)."""

    async def append(
        self, conversation_id: Any, role: Any, text: Any, turn_index: Any = None, ts: Any = None
    ) -> Any: ...


class Importer:
    """One import of one file into one store."""

    def __init__(
        self,
        bulk: MemoryBulk,
        history: TurnSink | None = None,
        *,
        dry_run: bool = False,
        replace_conflicts: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """`replace_conflicts`: the owner asks that memories stored under an id with other text take
        the file's."""
        self._bulk = bulk
        self._replace_conflicts = replace_conflicts
        self._history = history
        self._progress = progress  # told the bytes read so far, after each batch
        self.report = ImportReport(dry_run=dry_run)
        self._dimension: int | None = None  # vectors in the file are used only when the model matches
        self._seen_ids: dict[str, int] = {}  # the ids the file gives, and their lines
        self._made: set[str] = set()  # the ids this import made (`_identified`)
        self._seen_texts: set[str] = set()
        self._pending: list[tuple[int, IncomingMemory]] = []
        self._clock = now_us()  # memories without times get this, one microsecond apart, in file order
        self.report.made_from_us = self._clock
        self._mode: str | None = None
        self._recognised = False  # the first line that is not blank was one of an export's
        self._max_bytes = bulk.max_content_bytes
        self._links = ImportLinks()

    async def run(self, stream: IO[bytes]) -> ImportReport:
        done = 0
        turn = time.monotonic()
        cap = line_cap(self._max_bytes)
        for number, (raw, size) in enumerate(read_lines(stream, cap), start=1):
            done += size
            self.report.lines = number
            if raw is None:
                if not self._recognised:
                    raise NotAnExportError(NOT_AN_EXPORT)
                self.report.refuse(number, f"longer than {cap:,} bytes (not read)")
            else:
                await self._line(number, raw)
            if len(self._pending) >= BATCH and not await self._flush():
                await self._finish_links()
                return self.report
            if time.monotonic() - turn >= YIELD_SECONDS:  # however many lines are refused, others get their turn
                if self._progress is not None:
                    self._progress(done)
                await asyncio.sleep(0)
                turn = time.monotonic()
        if not self._recognised:
            raise NotAnExportError(EMPTY_FILE)
        await self._flush()
        await self._finish_links()
        if self._progress is not None:
            self._progress(done)
        return self.report

    async def run_items(self, items: AsyncIterable[SourceItem]) -> ImportReport:
        """Import the memories another program's file became (`symbiote.transfer.sources`), a batch
        at a time as a file's lines, refusing an item with its number and reason."""
        self._recognised = True
        turn = time.monotonic()
        async for item in items:
            self.report.lines = max(self.report.lines, item.number + max(item.count, 1) - 1)
            if item.record is None:
                self.report.refuse(item.number, item.refused, item.count)
            else:
                try:
                    self._memory(item.number, item.record)
                except LineError as exc:
                    self.report.refuse(item.number, f"{item.where}: {exc}" if item.where else str(exc))
                except (TypeError, ValueError, ArithmeticError) as exc:  # a field of a type or size no check expected
                    log.info("import %s %d refused: %r", self.report.unit, item.number, exc)
                    self.report.refuse(item.number, f"a field cannot be read ({type(exc).__name__})")
            if len(self._pending) >= BATCH and not await self._flush():
                return self.report
            if time.monotonic() - turn >= YIELD_SECONDS:
                await asyncio.sleep(0)
                turn = time.monotonic()
        await self._flush()
        return self.report

    async def _line(self, number: int, raw: bytes) -> None:
        text = raw.strip()
        if not text:
            return
        try:
            record = json.loads(text)
        except (ValueError, RecursionError) as exc:  # decoding, UTF-8, a number past Python's digit limit, nesting
            if not self._recognised:
                raise NotAnExportError(NOT_AN_EXPORT) from None
            self.report.refuse(number, _not_json(exc))
            return
        if not self._recognised:
            if not _recognisable(record):
                raise NotAnExportError(NOT_AN_EXPORT)
            self._recognised = True
        try:
            if not isinstance(record, dict):
                raise LineError("not a JSON object")
            await self._record(number, record)
        except LineError as exc:
            self.report.refuse(number, str(exc))
        except SymbioteError as exc:  # a turn the history refuses (e.g. other text at an existing index)
            self.report.refuse(number, str(exc))
        except (TypeError, ValueError, RecursionError) as exc:  # a field of a type or depth no check expected
            log.info("import line %d refused: %r", number, exc)
            self.report.refuse(number, f"a field cannot be read ({type(exc).__name__})")

    async def _record(self, number: int, record: dict[str, Any]) -> None:
        if is_header(record):
            if self._mode is not None:
                raise LineError("a header is only allowed on the first line")
            header = read_header(record)
            same_model = header.model == MODEL_NAME and header.dimension == MODEL_DIMENSION
            self._dimension = MODEL_DIMENSION if same_model and header.vectors else None
            self.report.reembedded = self._dimension is None
            self._mode = "symbiote"
            return
        if is_graph_line(record):
            self._mode = self._mode or "knowledge-graph"
            self.report.source = self._mode
            for item in graph_memories(record):
                self._memory(number, item)
            return
        self._mode = self._mode or "symbiote"
        kind = record.get("kind", "memory")
        if kind == "memory":
            self._memory(number, record)
        elif kind == "turn":
            await self._turn(record)
        else:
            raise LineError(f"unknown kind {kind!r} (memory or turn)")

    def _memory(self, number: int, record: dict[str, Any]) -> None:
        incoming = read_memory(record, self._clock, self._dimension, self._max_bytes)
        memory = incoming.memory
        if memory.memory_id:
            if memory.memory_id in self._seen_ids:
                raise LineError(f"id {memory.memory_id} already appeared on line {self._seen_ids[memory.memory_id]}")
            self._seen_ids[memory.memory_id] = number
        if memory.content_hash in self._seen_texts:
            self.report.unchanged += 1  # the same text earlier in the file: stored once
            self._links.unstored(memory)
            return
        self._seen_texts.add(memory.content_hash)
        if not memory.memory_id:
            self._clock += 1
            self.report.made_to_us = self._clock
        self._pending.append((number, incoming))

    async def _turn(self, record: dict[str, Any]) -> None:
        if self._history is None:
            raise LineError("conversation turns cannot be imported here (no conversation history)")
        if self.report.dry_run:
            self.report.turns_added += 1
            return
        result = await self._history.append(
            record.get("conversation_id"),
            record.get("role"),
            record.get("text"),
            record.get("turn_index"),
            record.get("ts"),
        )
        if result.status == "appended":
            self.report.turns_added += 1
        else:
            self.report.turns_unchanged += 1

    async def _flush(self) -> bool:
        """Write the pending memories; False when the import has to stop (reported)."""
        if not self._pending:
            return True
        numbers = [number for number, _incoming in self._pending]
        first = numbers[0]
        pending, self._pending = self._pending, []
        try:
            claimed, stored = await self._identified([incoming for _number, incoming in pending])
            for memory, _vectors in claimed:
                self._links.claim(memory)
            # the file's links wait for the end of the file: each memory keeps the links it has
            items = [
                (with_claim(m, claim_of(stored[m.memory_id]) if m.memory_id in stored else NO_LINKS), vectors)
                for m, vectors in claimed
            ]
            outcomes = await self._bulk.import_memories(
                items, dry_run=self.report.dry_run, replace_conflicts=self._replace_conflicts
            )
        except SymbioteError as exc:
            self.report.stopped = f"{exc} (nothing from line {first} on was written)"
            log.warning("import stopped: %s", exc)
            return False
        for (memory, _vectors), (outcome, mid) in zip(items, outcomes):
            self._links.stored(memory.memory_id, outcome, mid)
        for number, (outcome, mid) in zip(numbers, outcomes):
            if outcome == "conflict":
                self.report.conflict(number, mid)
            else:
                setattr(self.report, outcome, getattr(self.report, outcome) + 1)
        return True

    async def _identified(
        self, batch: list[IncomingMemory]
    ) -> tuple[list[tuple[StoredMemory, np.ndarray | None]], dict[str, StoredMemory]]:
        """The batch with an id for each memory the file gave none, and what is stored under the ids.

        A made id is the memory's creation time and four digits of its text's hash (`made_id`): the
        same entry imported again gets the same id. One already taken, in this import or in the store
        by another text, moves to the next four digits, so a made id never names another memory (an
        import's `--replace` replaces only the entries the file names by id)."""
        memories = [incoming.memory for incoming in batch]
        made = [index for index, memory in enumerate(memories) if not memory.memory_id]
        for index in made:
            memories[index] = replace(memories[index], memory_id=self._free(made_id(memories[index], 0)))
        stored = await self._bulk.fetch([memory.memory_id for memory in memories])
        taken = [index for index in made if _taken(stored, memories[index])]
        attempt = 1
        while taken:
            if attempt >= ID_TAILS:
                raise SymbioteError("no free id for a memory of this file: every one its creation time allows is taken")
            for index in taken:
                self._made.discard(memories[index].memory_id)
                memories[index] = replace(memories[index], memory_id=self._free(made_id(memories[index], attempt)))
            again = await self._bulk.fetch([memories[index].memory_id for index in taken])
            stored.update(again)
            taken = [index for index in taken if _taken(again, memories[index])]
            attempt += 1
        return [(memory, incoming.vectors) for memory, incoming in zip(memories, batch)], stored

    def _free(self, memory_id: str) -> str:
        """`memory_id`, or the next tail not yet made by this import; recorded as made."""
        prefix, tail = memory_id[:20], int(memory_id[20:])
        while memory_id in self._made or memory_id in self._seen_ids:
            tail = (tail + 1) % ID_TAILS
            memory_id = f"{prefix}{tail:04d}"
        self._made.add(memory_id)
        return memory_id

    async def _finish_links(self) -> None:
        """Check the file's links against the store as the import left it, and write those kept,
        each write holding both ends of its links (`symbiote.transfer.import_links`)."""
        try:
            result = await self._links.resolve(self._bulk.fetch)
            self.report.links_dropped = result.dropped
            if self.report.dry_run:
                self.report.links_added = result.added
                return
            for records in result.writes:
                await self._bulk.write_links(records)
            self.report.links_added = result.added
        except SymbioteError as exc:
            self.report.stopped = self.report.stopped or f"{exc} (the file's links were not all written)"
            log.warning("import's links not written: %s", exc)


ID_TAILS = 10_000  # the four digits after a memory id's creation time


def made_id(memory: StoredMemory, attempt: int) -> str:
    """The id an import makes for a memory the file names none for: its creation time and four digits
    of its text's hash (moved on by `attempt` when taken), stable for the same entry."""
    tail = (int(memory.content_hash[:8], 16) + attempt) % ID_TAILS
    return f"mem_{memory.created_us:016d}{tail:04d}"


def _taken(stored: dict[str, StoredMemory], memory: StoredMemory) -> bool:
    """Whether another memory (another text) is stored under this memory's id."""
    old = stored.get(memory.memory_id)
    return old is not None and old.content_hash != memory.content_hash


def _recognisable(record: Any) -> bool:
    """Whether a file's first record is one an export or a `memory.jsonl` begins with."""
    if not isinstance(record, dict):
        return False
    return is_header(record) or is_graph_line(record) or record.get("kind") in ("memory", "turn") or "content" in record


def _not_json(exc: ValueError | RecursionError) -> str:
    """Why a line is not JSON, in words (never the decoder's own message)."""
    if isinstance(exc, RecursionError):
        return "not valid JSON (nested too deeply)"
    if isinstance(exc, UnicodeDecodeError):
        return "not text (not UTF-8)"
    if isinstance(exc, json.JSONDecodeError):
        return "not valid JSON"
    return "not valid JSON (a number with too many digits)"
