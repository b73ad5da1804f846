"""Moving memories in and out of Symbiote: the JSON Lines export, its import, and the import of the
reference MCP memory server's knowledge graph, so an owner can leave or arrive with all their data.

Everything here works over the memory engine, so the CLI (on a stopped server's data directory)
and the console (on the running server) share one implementation.

This is the package's door: other packages import from `symbiote.transfer`, never from a module
inside it (tests/test_layers.py checks). `export_format` is let out whole: the file's format, its
line kinds and names.
"""

from symbiote.transfer.exporting import export_lines
from symbiote.transfer.history_access import TurnReader, turn_reader
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.pasted import batch_tag, pasted_lines
from symbiote.transfer.sources import import_path, import_text
from symbiote.transfer.terminal import export_to, import_from, report_lines

__all__ = [
    "ImportReport",
    "TurnReader",
    "batch_tag",
    "export_format",
    "export_lines",
    "export_to",
    "import_from",
    "import_path",
    "import_text",
    "pasted_lines",
    "report_lines",
    "turn_reader",
]
