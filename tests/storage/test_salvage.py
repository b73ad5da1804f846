"""A damaged page in the side database (`symbiote.storage.chroma.salvage`): the keyword index is
rebuilt from Chroma, the write-behind journal and the trash are read out of the damaged file, and
what could not be read is said by `/health` (degraded) until the file set aside is moved away."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import httpx
import numpy as np

from symbiote.config import Settings
from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME
from symbiote.storage.base import SIDE_DATABASE_FILE
from symbiote.storage.chroma.opening import open_embedded_store
from symbiote.storage.chroma.salvage import salvage
from symbiote.storage.chroma.side_database import SideDatabase, TrashRow
from tests.conftest import make_app

ROOT = Path(__file__).resolve().parents[2]

# The scenario: 20 stored, 5 deleted, one more answered for, then killed at once, its
# journal row still waiting for Chroma.
STORES = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    import numpy as np
    from symbiote.storage.base import StoredMemory, content_hash
    from symbiote.storage.chroma.opening import open_embedded_store

    store = open_embedded_store(Path(sys.argv[1]), "all-MiniLM-L6-v2", 384, vectors_in_memory=True, write_behind=True)
    while store.idle_step():
        pass
    rng = np.random.default_rng(5)
    def stored(n, text):
        vector = rng.standard_normal((1, 384)).astype(np.float32)
        memory = StoredMemory(f"m{n}", text, "2026-01-01T00:00:00Z", 1_000_000 + n, (), content_hash(text))
        assert store.store_new(memory, vector / np.linalg.norm(vector), [text], 3)[0] is None
    for n in range(20):
        stored(n, f"Note {n}: the spare key is under pot number {n}.")
    store.settle()
    assert store.trash([f"m{n}" for n in range(5)], "owner", 42) == [f"m{n}" for n in range(5)]
    stored(20, "The wifi password of the cabin is larch-river-42.")
    print("answered", flush=True)
    os._exit(0)
    """
)


def crashed_store(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", STORES, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert done.stdout.strip() == "answered", done.stderr
    with closing(sqlite3.connect(path / SIDE_DATABASE_FILE)) as db:
        assert db.execute("SELECT count(*) FROM unwritten").fetchone()[0] == 1  # waiting for Chroma


def damage_root_page(file: Path, table: str) -> None:
    """Overwrite the root page of `table` (after the WAL is folded into the file, as a close does)."""
    with closing(sqlite3.connect(file)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = int(db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0])
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
    with file.open("r+b") as handle:
        handle.seek((root - 1) * size)
        handle.write(b"\xa5" * size)


def test_a_damaged_keyword_index_page_loses_no_acknowledged_memory_and_no_trash(tmp_path: Path) -> None:
    path = tmp_path / "data"
    crashed_store(path)
    damage_root_page(path / SIDE_DATABASE_FILE, "docs")
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    try:
        assert list(store.get(["m20"])) == ["m20"]  # the acknowledged memory, from the journal read out
        assert [m.memory_id for m in store.keyword("wifi password cabin", 3)][:1] == ["m20"]
        items, total = store.trashed(0, 10)
        assert total == 5 and {item.memory.memory_id for item in items} == {f"m{n}" for n in range(5)}
        assert store.count() == 16 and store.counts()["keyword_index"] == 16
        assert store.losses() == []  # everything primary was read
        assert store.restore(["m3"]) == ["m3"] and store.count() == 17
    finally:
        store.close()
    assert len(list(path.glob(f"{SIDE_DATABASE_FILE}.damaged-*Z"))) == 1  # set aside, not deleted


async def test_health_says_degraded_while_trash_rows_could_not_be_read(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "data"
    crashed_store(path)
    damage_root_page(path / SIDE_DATABASE_FILE, "trash")
    damage_root_page(path / SIDE_DATABASE_FILE, "docs")  # what makes the open notice
    app = make_app(dataclasses.replace(settings, chromadb_path=path))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            await app.state.runtime.engine.stats()  # opened
            health = (await http.get("/health")).json()
    (aside,) = path.glob(f"{SIDE_DATABASE_FILE}.damaged-*Z")
    assert health["status"] == "degraded" and health["memories"] == 16, health  # the journal's memory is back
    (said,) = health["lost_at_open"]
    assert aside.name in said and "the trash table" in said and ".recover" in said, said
    aside.rename(tmp_path / aside.name)  # the owner takes it away: no longer said at the next start
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    try:
        assert store.losses() == []
    finally:
        store.close()


def test_a_damaged_journal_page_is_noticed_at_open_and_its_loss_said(tmp_path: Path) -> None:
    path = tmp_path / "data"
    crashed_store(path)
    damage_root_page(path / SIDE_DATABASE_FILE, "unwritten")  # the acknowledged memory's row with it
    store = open_embedded_store(path, MODEL_NAME, MODEL_DIMENSION)
    try:
        (said,) = store.losses()
        assert "the unwritten table" in said and store.trashed(0, 0)[1] == 5  # the trash read out whole
        assert store.count() == 15 and store.counts()["keyword_index"] == 15
    finally:
        store.close()


def test_a_damaged_leaf_of_the_trash_loses_only_its_own_rows_and_says_so(tmp_path: Path) -> None:
    file = tmp_path / SIDE_DATABASE_FILE
    index = SideDatabase(file)
    rows = [
        TrashRow(f"mem_{n:020d}", n, "owner", f"memory {n} " * 40, {"created_us": n}, np.full(384, n, np.float32))
        for n in range(60)
    ]
    with index.transaction():
        index.trash.put(rows)
    index.close()
    with closing(sqlite3.connect(file)) as db:
        leaves = [
            page
            for (page,) in db.execute(
                "SELECT pageno FROM dbstat WHERE name = 'trash' AND pagetype = 'leaf' ORDER BY pageno"
            )
        ]
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
    assert len(leaves) > 3
    with file.open("r+b") as handle:  # one leaf in the middle: its rows, and only they, are lost
        handle.seek((leaves[len(leaves) // 2] - 1) * size)
        handle.write(b"\xa5" * size)
    found = salvage(file)
    read = {row[0] for row in found.tables["trash"][1]}
    assert 40 < len(read) < 60 and read <= {row.memory_id for row in rows}
    assert found.unread == [f"part of the trash table ({len(read)} rows read, {60 - len(read)} places unreadable)"]
