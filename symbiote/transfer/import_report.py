"""What an import did (or, dry, would do): counts, the lines refused and why, in words for the owner and
as a dict for the console's page and the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_REFUSALS_KEPT = 1000  # a report lists at most this many refused lines (all are counted)


@dataclass
class ImportReport:
    """What an import did (or, dry, would do); `refused` lists (line number, why)."""

    dry_run: bool = False
    source: str = "symbiote"  # or "knowledge-graph", "memory-service", "basic-memory", "pasted"
    unit: str = "line"  # what `refused` numbers: a line, or a database's row, or an entry of a JSON export
    added: int = 0
    unchanged: int = 0
    updated: int = 0
    kept: int = 0  # stored copies changed later than the file's, left as they are
    conflicts: int = 0  # stored under the same id with other text: left as stored
    conflicting: list[tuple[int, str]] = field(default_factory=list)  # (line number, id), the first MAX_REFUSALS_KEPT
    replaced: int = 0  # conflicts the owner asked to replace with the file's copy
    turns_added: int = 0
    turns_unchanged: int = 0
    links_added: int = 0  # links between memories taken from the file (both ends stored, agreeing)
    links_dropped: int = 0  # the file's link fields not taken (`symbiote.transfer.import_links`)
    refused_count: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)
    left_out: int = 0  # deleted in the source (mcp-memory-service keeps a deleted row until it is purged)
    lines: int = 0
    reembedded: bool = True
    stopped: str | None = None  # why the import stopped before the end of the file
    made_from_us: int = 0  # the times given to memories that came without one: this import's own span,
    made_to_us: int = 0  # so that undoing a pasted batch touches none stored before under its tag

    def refuse(self, line: int, reason: str, count: int = 1) -> None:
        """`count` lines in a row from `line`, for the same reason."""
        count = max(count, 1)
        self.refused_count += count
        listed = min(count, MAX_REFUSALS_KEPT - len(self.refused))
        self.refused += [(line + offset, reason) for offset in range(max(listed, 0))]

    def conflict(self, line: int, memory_id: str) -> None:
        self.conflicts += 1
        if len(self.conflicting) < MAX_REFUSALS_KEPT:
            self.conflicting.append((line, memory_id))

    def summary(self) -> str:
        verb = "would be " if self.dry_run else ""
        parts = [
            f"{self.added} {verb}added",
            f"{self.unchanged} unchanged",
            f"{self.updated} {verb}updated",
        ]
        if self.kept:
            parts.append(f"{self.kept} kept (stored copy is newer)")
        if self.conflicts:
            parts.append(f"{self.conflicts} conflicts (stored under the same id with other text, left as stored)")
        if self.replaced:
            parts.append(f"{self.replaced} {verb}replaced by the file's text")
        if self.turns_added or self.turns_unchanged:
            if self.dry_run:  # a dry run does not read the history: a turn already there counts here too
                parts.append(f"{self.turns_added} conversation turns would be added (or are already there)")
            else:
                parts.append(f"{self.turns_added} conversation turns added, {self.turns_unchanged} already there")
        if self.links_added:
            parts.append(f"{self.links_added} links between memories {verb}added")
        if self.links_dropped:
            parts.append(
                f"{self.links_dropped} links dropped (naming a memory neither the file nor the store holds, "
                "or one that does not name it back)"
            )
        if self.left_out:
            parts.append(f"{self.left_out} deleted in the source, left out")
        parts.append(f"{self.refused_count} refused")
        text = ("Dry run: " if self.dry_run else "") + ", ".join(parts) + "."
        if self.stopped:
            text += f" Stopped early: {self.stopped}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "source": self.source,
            "added": self.added,
            "unchanged": self.unchanged,
            "updated": self.updated,
            "kept": self.kept,
            "conflicts": self.conflicts,
            "replaced": self.replaced,
            "conflicting": [{"line": line, "id": mid} for line, mid in self.conflicting],
            "turns_added": self.turns_added,
            "turns_unchanged": self.turns_unchanged,
            "links_added": self.links_added,
            "links_dropped": self.links_dropped,
            "refused_count": self.refused_count,
            "refused": [{"line": line, "reason": reason} for line, reason in self.refused],
            "unit": self.unit,
            "left_out": self.left_out,
            "lines": self.lines,
            "stopped": self.stopped,
        }
