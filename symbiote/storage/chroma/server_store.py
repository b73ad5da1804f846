"""`ChromaMemoryStore` on a Chroma server (`CHROMA_HOST`), its local keyword index kept in step.

The keyword index (`symbiote.storage.chroma.side_database`, SQLite FTS5) has no counterpart on a Chroma
server, so each instance keeps its own copy in its local CHROMADB_PATH: rebuilt from Chroma at open
(as for the embedded store), updated atomically with this instance's own writes, and caught up with
other instances' writes before a keyword search (at most every `KEYWORD_SYNC_SECONDS`, when the
number of memories on the server differs from the index's). See docs/chroma-server.md for what that
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
