"""The process that reads another program's file for an import (`python -m symbiote.transfer.source_reader`).

A file an owner is handed may be built to be slow or large to read (a database view that never
ends, a note made to make a parser backtrack, millions of empty entries), so it is never read in
the server's process: this one reads it within its own limits (memory, CPU time), and the server
(`symbiote.transfer.source_process`) takes its memories one line of JSON at a time, kills it
when the import is cancelled or stops, and survives whatever it meets. It ends by itself when the
server goes (its standard input closes).

What it writes, one JSON object a line: first `{"source": name, "unit": unit}` (or `{"source":
null}`: JSON Lines, read by the server itself), or `{"refused": why, "whole": true}`; then one
`{"n": number, "r": record, "w": where}` per memory or `{"n": number, "x": why, "k": count}` per
run of refusals; last
`{"end": true, "left_out": n}`, or `{"stop": why}` when the file cannot be read to its end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sqlite3
import sys
import threading
import zipfile
from pathlib import Path
from typing import IO, Any

from symbiote.errors import InvalidInputError
from symbiote.transfer.importing import NotAnExportError
from symbiote.transfer.source_process import line_limit
from symbiote.transfer.sources import Source, source_of

MEMORY_BYTES = 768 * 1024 * 1024  # the reader's heap at most: a file needing more is stopped, the server untouched
RUN = 100_000  # refusals in a row said in one line at most (the server hears from the reader often)
CPU_SECONDS = 1800  # the reader's processor time at most (waiting for the server to take a memory does not count)


def _limit(memory_bytes: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))


def _end_with_server() -> None:
    """Exit when the server's end of standard input closes (the server stopped or was killed)."""

    def watch() -> None:
        while os.read(0, 65536):  # the descriptor itself: no buffered reader's lock is held at exit
            pass
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def _line(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":")) + "\n"  # ASCII: a lone surrogate is written escaped


def _write(out: IO[str], message: dict[str, Any]) -> None:
    out.write(_line(message))


def _stream(out: IO[str], source: Source, max_bytes: int) -> None:
    """Each memory, one a line; refusals in a row for the same reason go as one line (`"k"`: how
    many), so millions of empty entries cost the server a few lines."""
    run: dict[str, Any] | None = None
    for item in source.items:
        if item.record is None:
            same = run is not None and run["x"] == item.refused and run["n"] + run["k"] == item.number
            if run is not None and same and run["k"] < RUN:
                run["k"] += 1
                continue
            if run is not None:
                _write(out, run)
            run = {"n": item.number, "x": item.refused, "k": 1}
            continue
        if run is not None:
            _write(out, run)
            run = None
        line = _line({"n": item.number, "r": item.record, "w": item.where})
        if len(line) > line_limit(max_bytes):  # a note's title of megabytes: that memory alone is refused
            line = _line({"n": item.number, "x": f"{item.where}: longer than {max_bytes:,} bytes (not read)"})
        out.write(line)
    if run is not None:
        _write(out, run)
    _write(out, {"end": True, "left_out": sum(source.left_out)})


def read(path: Path, max_bytes: int, out: IO[str]) -> None:
    """Read `path` and write what it holds to `out` (see the module's docstring)."""
    started = False
    try:
        source = source_of(path, max_bytes)
        if source is None:
            _write(out, {"source": None})
            return
        _write(out, {"source": source.name, "unit": source.unit})
        started = True
        _stream(out, source, max_bytes)
    except NotAnExportError as exc:
        _write(out, {"stop": str(exc)} if started else {"refused": str(exc), "whole": True})
    except InvalidInputError as exc:
        _write(out, {"stop": str(exc)} if started else {"refused": str(exc)})
    except (sqlite3.Error, zipfile.BadZipFile, OSError, EOFError) as exc:
        why = f"The file could not be read ({type(exc).__name__}: {exc})."
        _write(out, {"stop": why} if started else {"refused": why})
    except MemoryError:
        why = f"Reading this file needs more than the {MEMORY_BYTES // (1024 * 1024)} MiB an import is given."
        _write(out, {"stop": why} if started else {"refused": why})
    except RecursionError:
        why = "This file is nested too deeply to be read."
        _write(out, {"stop": why} if started else {"refused": why})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="symbiote.transfer.source_reader")
    parser.add_argument("path")
    parser.add_argument("--max-bytes", type=int, required=True)
    parser.add_argument("--memory-bytes", type=int, default=MEMORY_BYTES)
    parser.add_argument("--cpu-seconds", type=int, default=CPU_SECONDS)
    args = parser.parse_args(argv)
    _limit(args.memory_bytes, args.cpu_seconds)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole terminal: the server stops this one
    _end_with_server()
    out = sys.stdout
    read(Path(args.path), args.max_bytes, out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
