"""Export and import from a terminal (`symbiote export`, `symbiote import`): files, a progress bar
on stderr when it is a terminal, and a report at the end.

An export is written to a temporary file beside its target and renamed into place when complete,
so an interrupted export never leaves a file that looks whole.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from symbiote.telemetry.redaction import escape_controls
from symbiote.transfer.exporting import TurnSource, export_lines
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.importing import TurnSink
from symbiote.transfer.sources import import_path

if TYPE_CHECKING:
    from symbiote.memory import MemoryBulk


def _bar(total: int, unit: str, description: str, stream: IO[str] | None) -> Any:
    """`stream` None: standard error as it is now (a default bound at import would keep the one of then)."""
    from tqdm import tqdm

    stream = stream if stream is not None else sys.stderr
    return tqdm(
        total=total,
        unit=unit,
        unit_scale=unit == "B",
        desc=description,
        file=stream,
        disable=not stream.isatty(),
        leave=False,
    )


async def export_to(
    bulk: MemoryBulk,
    out: Path | None,
    history: TurnSource | None = None,
    with_vectors: bool = False,
    progress_stream: IO[str] | None = None,
) -> int:
    """Write an export to `out` (None: standard output); returns the number of records (memories and
    turns) written after the header."""
    bar = _bar(0, "memories", "exporting", progress_stream)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    written = -1  # the header line is not a record
    try:
        if out is None:
            async for chunk in export_lines(bulk, history, with_vectors=with_vectors, progress=progress):
                sys.stdout.write(chunk)
                written += chunk.count("\n")
            sys.stdout.flush()
            return written
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
                async for chunk in export_lines(bulk, history, with_vectors=with_vectors, progress=progress):
                    stream.write(chunk)
                    written += chunk.count("\n")
            os.replace(temporary, out)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    finally:
        bar.close()
    return written


async def import_from(
    bulk: MemoryBulk,
    path: Path,
    history: TurnSink | None = None,
    dry_run: bool = False,
    progress_stream: IO[str] | None = None,
    replace: bool = False,
) -> ImportReport:
    """Import a file or folder of any format read (`symbiote.transfer.sources`) with a progress bar."""
    size = path.stat().st_size if path.is_file() else 0
    bar = _bar(size, "B", "checking" if dry_run else "importing", progress_stream)

    def progress(done: int) -> None:
        bar.n = done
        bar.refresh()

    try:
        return await import_path(bulk, path, history, dry_run=dry_run, replace=replace, progress=progress)
    finally:
        bar.close()


def report_lines(report: ImportReport, shown: int = 50) -> list[str]:
    """The report as a person reads it: the counts, then the refused lines with their numbers.
    Every control character a file put in it (a zip entry's name, a note's path) is written as
    its escape, so a file cannot drive the terminal."""
    lines = [report.summary()]
    read_as = {
        "knowledge-graph": "the knowledge graph of the reference MCP memory server",
        "memory-service": "mcp-memory-service's memories (their text embedded again by Symbiote's model)",
        "basic-memory": "basic-memory's notes (their observations and relations)",
        "pasted": "a pasted list, one memory per line or bullet",
    }
    if report.source in read_as:
        lines.append(f"(read as {read_as[report.source]})")
    for line, memory_id in report.conflicting[:shown]:
        lines.append(
            f"  line {line}: {memory_id} is stored with other text (left as it is; --replace takes the file's)"
        )
    if report.conflicts > shown:
        lines.append(f"  ... and {report.conflicts - shown} more conflicts")
    for line, reason in report.refused[:shown]:
        lines.append(f"  {report.unit} {line}: {reason}")
    if report.refused_count > shown:
        lines.append(f"  ... and {report.refused_count - shown} more refused")
    return [escape_controls(line) for line in lines]
