"""Another program's file read in a process of its own (`symbiote.transfer.source_reader`), so
nothing a file holds can stop the server: its event loop only ever waits for the next line.

The reader runs within its own memory and CPU limits; here, a reader that gives nothing for
IDLE_SECONDS while the import waits for it is killed, and so is one whose import is cancelled (the
console's cancel, SIGTERM, Ctrl-C): the import ends between two batches, each whole. What the
reader could not read (a crash, a limit reached) stops the import with what was read so far
stored, said in its report.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from symbiote.errors import InvalidInputError
from symbiote.transfer.importing import NotAnExportError, SourceItem

log = logging.getLogger(__name__)

IDLE_SECONDS = 60.0  # a reader that gives nothing for this long while it is waited for is stopped
KILL_WAIT_SECONDS = 5.0


def line_limit(max_bytes: int) -> int:
    """The longest line the reader writes: a memory's text JSON-escaped in ASCII (at most six
    characters a byte) and room for its tags and fields."""
    return 6 * max_bytes + 256 * 1024


@dataclass
class ReadSource:
    """What the reader says of a file: its program and unit, then its memories as they come."""

    name: str
    unit: str
    process: asyncio.subprocess.Process
    idle_seconds: float
    left_out: int = 0
    stopped: str = ""  # why the reader ended before the end of the file ("" when it read it all)
    _done: bool = field(default=False, repr=False)

    @property
    def read_to_its_end(self) -> bool:
        """The reader said its last line (its end, or why it stopped)."""
        return self._done

    async def items(self) -> AsyncIterator[SourceItem]:
        while not self._done:
            message = await _message(self.process, self.idle_seconds)
            if not isinstance(message, dict):
                self.stopped = await _why(self.process, message, self.idle_seconds)
                return
            if "n" in message:
                yield _item(message)
            elif message.get("end"):
                left_out = message.get("left_out")
                self.left_out = left_out if isinstance(left_out, int) else 0
                self._done = True
            else:
                self.stopped = str(message.get("stop") or "The file could not be read to its end.")
                self._done = True


def _item(message: dict[str, object]) -> SourceItem:
    number = message["n"]
    if not isinstance(number, int):
        raise InvalidInputError("The file's reader sent a line without a number.")
    record = message.get("r")
    if isinstance(record, dict):
        return SourceItem(number, record, where=str(message.get("w") or ""))
    count = message.get("k")
    return SourceItem(number, refused=str(message.get("x") or "not read"), count=count if isinstance(count, int) else 1)


QUIET, ENDED = "quiet", "ended"


async def _message(process: asyncio.subprocess.Process, idle_seconds: float) -> dict[str, object] | str:
    """The reader's next line; QUIET when it gave nothing for `idle_seconds` (it is killed), ENDED
    when it ended or wrote something that is not one of its lines."""
    assert process.stdout is not None
    try:
        # not wait_for: on Python 3.11 it drops a cancel (Ctrl-C, the console's Cancel) that comes as
        # the line does, and the reader streams lines without pause
        async with asyncio.timeout(idle_seconds):
            line = await process.stdout.readline()
    except TimeoutError:
        process.kill()
        return QUIET
    except ValueError:  # a line past the limit: the reader is not doing what it should
        process.kill()
        return ENDED
    try:
        message = json.loads(line) if line else None
    except ValueError:
        message = None
    return message if isinstance(message, dict) else ENDED


async def _why(process: asyncio.subprocess.Process, outcome: str, idle_seconds: float) -> str:
    """Why the reader ended without saying it reached the end, in words for the report."""
    if outcome == QUIET:
        return f"Reading this file gave nothing for {idle_seconds:g} s, so it was stopped."
    with suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), KILL_WAIT_SECONDS)
    return (
        "The reader of this file stopped early: it needed more memory or time than an import is given, "
        "or failed (the server's log says why), so it was stopped."
    )


@asynccontextmanager
async def read_source(
    path: Path, max_bytes: int, *, idle_seconds: float = IDLE_SECONDS
) -> AsyncIterator[ReadSource | None]:
    """The file's memories as its reader gives them; None for JSON Lines (read by the importer
    itself); a file refused whole raises. The reader is killed on leaving, however that happens."""
    command = [sys.executable, "-m", "symbiote.transfer.source_reader", str(path), "--max-bytes", str(max_bytes)]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=line_limit(max_bytes),
    )
    source: ReadSource | None = None
    try:
        head = await _message(process, idle_seconds)
        if not isinstance(head, dict):
            why = await _why(process, head, idle_seconds)
            raise InvalidInputError(why.replace("so it was stopped", "so nothing was imported"))
        if "refused" in head:
            refused = str(head["refused"])
            raise NotAnExportError(refused) if head.get("whole") else InvalidInputError(refused)
        if head.get("source") is None:
            yield None
        else:
            source = ReadSource(str(head["source"]), str(head.get("unit") or "line"), process, idle_seconds)
            yield source
    finally:
        await _end(process, said_its_last=source is not None and source.read_to_its_end)


async def _end(process: asyncio.subprocess.Process, said_its_last: bool = False) -> None:
    """Stop the reader: one that said its last line is let exit on its own first (its exit flushes what
    it keeps, a coverage measurement among them); any other, or one that does not exit in time, is killed."""
    if not said_its_last and process.returncode is None:
        process.kill()
    if process.stdin is not None:
        process.stdin.close()
    if not await _ended(process) and said_its_last and process.returncode is None:
        process.kill()
        await _ended(process)
    if process.returncode not in (0, -9, None):
        log.warning("an import's reader ended with status %s", process.returncode)


async def _ended(process: asyncio.subprocess.Process) -> bool:
    """Whether the reader ended within KILL_WAIT_SECONDS. What it wrote and no one took is read first:
    on Python 3.11 `wait` returns only once its pipes are closed, and a full pipe is never closed (a stop
    would wait the whole KILL_WAIT_SECONDS, then print "Event loop is closed" at exit)."""
    with suppress(TimeoutError):
        async with asyncio.timeout(KILL_WAIT_SECONDS):
            if process.stdout is not None:
                await process.stdout.read()
            await process.wait()
            return True
    return False
