"""`symbiote export` and `symbiote import`: all the memories out to one file, or back in.

Both open the data directory the way the server does (`build_runtime`), so stop the server
first; while it runs, use the console's export and import (`/console/transfer`) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path

from symbiote.cli.environment import settings_from_env


def export_memories(args: argparse.Namespace) -> int:
    """Write every memory (and with --with-history every conversation turn) as JSON Lines."""
    from symbiote.errors import SymbioteError
    from symbiote.runtime import build_runtime
    from symbiote.transfer import export_to, turn_reader

    out = None if args.out == "-" else Path(args.out or time.strftime("symbiote-export-%Y%m%d-%H%M%S.jsonl"))
    runtime = build_runtime(settings_from_env())
    history = runtime.history.history if runtime.history is not None else None
    turns = turn_reader(history) if args.with_history and history is not None else None
    try:
        written = asyncio.run(export_to(runtime.engine.bulk, out, turns, with_vectors=args.with_vectors))
    except SymbioteError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    finally:
        runtime.close()
    if out is not None:
        print(f"Exported {written} records to {out}.", file=sys.stderr)
    return 0


def import_memories(args: argparse.Namespace) -> int:
    """Import a Symbiote export, a memory.jsonl, mcp-memory-service's database or export, a
    basic-memory folder, or (--text) a pasted list."""
    from symbiote.errors import SymbioteError
    from symbiote.runtime import build_runtime
    from symbiote.transfer import batch_tag, import_from, import_text, report_lines

    path = Path(args.text or args.file or "")
    if not (args.text or args.file) or not (path.is_file() or (path.is_dir() and not args.text)):
        print(f"symbiote: {path} is not a file{'' if args.text else ' or a folder'}", file=sys.stderr)
        return 2
    if args.text:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            print(f"symbiote: {path} is not UTF-8 text", file=sys.stderr)
            return 1
    runtime = build_runtime(settings_from_env())
    history = runtime.history.history if runtime.history is not None else None
    # Ctrl-C is ours, not asyncio's: asyncio.run turns it into a cancellation that the import's
    # cleanup may finish quietly (exit 0, seen on a loaded machine). Here it always ends the import
    # with 130, whatever the moment it comes.
    interrupted: list[int] = []

    def on_interrupt(signum: int, _frame: object) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        if args.text:
            tag = args.tag or batch_tag()
            report = asyncio.run(import_text(runtime.engine.bulk, text, tag, dry_run=args.dry_run))
        else:
            report = asyncio.run(
                import_from(runtime.engine.bulk, path, history, dry_run=args.dry_run, replace=args.replace)
            )
    except SymbioteError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the reader is killed, the batch being written ends whole
        interrupted.append(signal.SIGINT)
    finally:
        runtime.close()
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        print("symbiote: import interrupted; what was imported before stays (each batch is whole).", file=sys.stderr)
        return 130
    print("\n".join(report_lines(report)))
    if args.text and report.added and not report.dry_run:
        print(f"Tagged {tag}: to undo, delete the memories with that tag (they go to the trash).")
    return 1 if report.stopped else 0


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`export` and `import` on the `symbiote` command line."""
    export_cmd = commands.add_parser(
        "export", help="write every memory to a JSON Lines file (stop the server first; see docs/export-format.md)"
    )
    export_cmd.add_argument("--out", help="file to write (default: symbiote-export-<time>.jsonl; - for stdout)")
    export_cmd.add_argument("--with-history", action="store_true", help="include the conversation history")
    export_cmd.add_argument(
        "--with-vectors",
        action="store_true",
        help="include the stored vectors (an import by the same model skips embedding)",
    )
    export_cmd.set_defaults(run=export_memories)
    import_cmd = commands.add_parser(
        "import",
        help="import an export, a memory.jsonl, mcp-memory-service's database or JSON export, a basic-memory "
        "folder, or a pasted list (stop the server first; see docs/export-format.md)",
    )
    import_cmd.add_argument("file", nargs="?", help="the file or folder (its format is told by what it holds)")
    import_cmd.add_argument("--text", metavar="FILE", help="a pasted list of memories, one per line or bullet")
    import_cmd.add_argument("--tag", help="with --text: the tag for the batch (default: pasted-<date>-<time>)")
    import_cmd.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    import_cmd.add_argument(
        "--replace", action="store_true", help="memories stored under the same id with other text take the file's text"
    )
    import_cmd.set_defaults(run=import_memories)
