"""`ChromaMemoryStore` on a Chroma server (`CHROMA_HOST`), its local keyword index kept in step.

The keyword index (`symbiote.storage.chroma.side_database`, SQLite FTS5) has no counterpart on a Chroma
server, so each instance keeps its own copy in its local CHROMADB_PATH: rebuilt from Chroma at open
(as for the embedded store), updated atomically with this instance's own writes, and caught up with
other instances' writes before a keyword search (at most every `KEYWORD_SYNC_SECONDS`): memories
added or deleted when the number on the server differs from the index's, and texts changed by the
memories' `updated_us`. See docs/chroma-server.md for what that
leaves out. A module of its own so that connecting to Chroma (`client`) needs no store class.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from symbiote.storage.chroma.bulk_reads import read_all
from symbiote.storage.chroma.store import ChromaMemoryStore

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

KEYWORD_SYNC_SECONDS = 5.0
UPDATE_MARGIN_US = 60 * 1_000_000  # updates this much older than the newest seen are looked at again


class ServerMemoryStore(ChromaMemoryStore):
    """`ChromaMemoryStore` on a Chroma server that other instances write to as well.

    This instance's keyword index does not see the other instances' writes, so before reading it
    (keyword search) it checks (at most every `sync_seconds`) whether the server holds as many memories as
    the index; when not, it adds what is missing and drops what was deleted, by id, fetching only
    the new memories' text. The check holds the index's write transaction, so it never races this
    instance's own store or delete.
    """

    def __init__(self, *args: Any, sync_seconds: float = KEYWORD_SYNC_SECONDS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sync_seconds = sync_seconds
        self._synced_at = time.monotonic()
        self._sync_lock = threading.Lock()
        self._updated_since = 0  # texts updated from then on are compared at the next catch-up
        self.catch_up()  # at open: what other instances changed while this one was away, texts included

    def _keywords_current(self) -> None:
        """Every read of the keyword index (a search's included) catches up with the server first."""
        self.catch_up(force=False)

    def catch_up(self, force: bool = True) -> int:
        """Bring the keyword index in step with the server; returns how many entries changed."""
        if not self._sync_lock.acquire(blocking=force):
            return 0  # another search is already catching up
        try:
            if not force and time.monotonic() - self._synced_at < self._sync_seconds:
                return 0
            try:
                return self._catch_up()
            except Exception:  # keyword search must not fail because the catch-up did
                log.warning("keyword index catch-up with the Chroma server failed", exc_info=True)
                return 0
            finally:
                self._synced_at = time.monotonic()
        finally:
            self._sync_lock.release()

    def _catch_up(self) -> int:
        return self._catch_up_count() + self._catch_up_texts()

    def _catch_up_texts(self) -> int:
        """Re-index the memories whose text another instance changed: those updated (`updated_us`)
        since the last look, less a margin for clocks and writes in flight; all of them at open."""
        got = read_all(self._memories, ["documents", "metadatas"], where={"updated_us": {"$gte": self._updated_since}})
        if not got["ids"]:
            return 0
        indexed = self._lexical.bodies(list(got["ids"]))
        changed = [
            (mid, int((meta or {}).get("created_us", 0)), doc or "")
            for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
            if mid in indexed and indexed[mid] != (doc or "")
        ]
        if changed:
            with self._lexical.transaction() as tx:
                for memory_id, created_us, body in changed:
                    tx.delete(memory_id)
                    tx.add(memory_id, created_us, body)
            log.info("keyword index caught up with %d texts changed on the Chroma server", len(changed))
        newest = max(int((meta or {}).get("updated_us", 0) or 0) for meta in got["metadatas"] or [{}])
        self._updated_since = max(self._updated_since, newest - UPDATE_MARGIN_US)
        return len(changed)

    def _catch_up_count(self) -> int:
        if self._memories.count() == self._lexical.count():
            return 0
        with self._lexical.transaction() as tx:
            remote = set(self._memories.get(include=[])["ids"])
            local = self._lexical.ids()
            gone, new = local - remote, remote - local
            for memory_id in gone:
                tx.delete(memory_id)
            if new:
                got = read_all(self._memories, ["documents", "metadatas"], ids=sorted(new))
                rows = sorted(
                    (int((meta or {}).get("created_us", 0)), mid, doc or "")
                    for mid, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
                )
                for created_us, memory_id, body in rows:
                    tx.add(memory_id, created_us, body)
        if gone or new:
            log.info("keyword index caught up with the Chroma server: %d added, %d removed", len(new), len(gone))
        return len(gone) + len(new)
