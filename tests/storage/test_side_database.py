"""The keyword index's rowids (`symbiote.storage.chroma.side_database`): a memory's fts row and docs row share one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from symbiote.storage.chroma.side_database import SCHEMA_VERSION, SideDatabase

MEMORIES = [
    ("mem_1", 1_000, "Caroline adopted a dog named Biscuit"),
    ("mem_2", 2_000, "We moved the Postgres migration to Friday"),
    ("mem_3", 3_000, "Biscuit the dog hates thunderstorms"),
    ("mem_4", 4_000, "The Lisbon trip is booked for May"),
]


def old_index(path: Path) -> None:
    """An index as written before schema version 1: fts rows numbered on their own (here in
    reverse order, so no rowid matches its docs row)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE docs (memory_id TEXT PRIMARY KEY, created_us INTEGER NOT NULL, body TEXT NOT NULL)")
    conn.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(memory_id UNINDEXED, body, ctx, tokenize='porter unicode61 remove_diacritics 2')"
    )
    for memory_id, created_us, body in MEMORIES:
        conn.execute("INSERT INTO docs VALUES (?, ?, ?)", (memory_id, created_us, body))
    for memory_id, _created_us, body in reversed(MEMORIES):
        conn.execute("INSERT INTO fts(memory_id, body, ctx) VALUES (?, ?, '')", (memory_id, body))
    conn.commit()
    conn.close()


def test_an_index_from_before_is_aligned_at_open_and_finds_the_same_memories(tmp_path: Path) -> None:
    path = tmp_path / "keywords.sqlite3"
    old_index(path)
    index = SideDatabase(path)
    assert index._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert {m.memory_id for m in index.search("what is Biscuit afraid of?", 10)} == {"mem_1", "mem_3"}
    assert index.search_words(["postgres"], 5)[0].memory_id == "mem_2"
    assert index.search("Lisbon", 5, after_us=3_500)[0].memory_id == "mem_4"
    assert index.search("Lisbon", 5, before_us=3_500) == []
    rows = index._conn.execute(
        "SELECT count(*) FROM docs JOIN fts ON fts.rowid = docs.rowid AND fts.memory_id = docs.memory_id"
    )
    assert rows.fetchone()[0] == len(MEMORIES)


def test_writes_and_deletes_keep_the_rowids_shared(tmp_path: Path) -> None:
    index = SideDatabase(tmp_path / "keywords.sqlite3")
    with index.transaction() as tx:
        for memory in MEMORIES:
            tx.add(*memory)
    with index.transaction() as tx:
        tx.delete("mem_2")
        tx.add("mem_5", 5_000, "Marco fixed the Postgres replica")
    assert [m.memory_id for m in index.search_words(["postgres"], 5, body_only=True)] == ["mem_5"]  # not mem_2, deleted
    reopened = SideDatabase(tmp_path / "keywords.sqlite3")
    assert reopened._aligned() and {
        m.memory_id for m in reopened.search_words(["dog", "biscuit"], 5, body_only=True)
    } == {"mem_1", "mem_3"}


def test_a_search_keeps_its_rarest_words_up_to_the_row_budget(tmp_path: Path) -> None:
    """Common words past the budget are left to the vector search; the rarest word always stays."""
    index = SideDatabase(tmp_path / "keywords.sqlite3", keyword_rows=10)
    with index.transaction() as tx:
        for i in range(300):
            body = "We drank coffee together" if i < 60 else f"Note number {i} about the garden"
            tx.add(f"mem_{i}", i, body)
        for i in range(5):
            tx.add(f"esp_{i}", 1_000 + i, "An espresso machine for the office")
        for i in range(3):
            tx.add(f"lis_{i}", 2_000 + i, "The Lisbon trip in May")
    found = {m.memory_id for m in index.search("coffee espresso Lisbon", 50)}
    assert found == {f"esp_{i}" for i in range(5)} | {f"lis_{i}" for i in range(3)}  # 8 rows; coffee's 60 would pass 10
    alone = SideDatabase(tmp_path / "keywords.sqlite3", keyword_rows=1)
    assert {m.memory_id for m in alone.search("coffee espresso Lisbon", 50)} == {f"lis_{i}" for i in range(3)}
    unbounded = SideDatabase(tmp_path / "keywords.sqlite3", keyword_rows=1_000)
    assert {f"mem_{i}" for i in range(60)} <= {m.memory_id for m in unbounded.search("coffee espresso Lisbon", 100)}


def test_a_search_scores_the_newest_of_its_matches_within_its_time_window(tmp_path: Path) -> None:
    """Past the scored bound only the newest matches are ranked; a time window picks its own newest."""
    index = SideDatabase(tmp_path / "keywords.sqlite3", scored_rows=10)
    with index.transaction() as tx:
        for i in range(30):
            tx.add(f"mem_{i}", 1_000_000 * i, f"We drank coffee on day {i}")
    assert {m.memory_id for m in index.search("coffee", 50)} == {f"mem_{i}" for i in range(20, 30)}
    early = index.search("coffee", 50, before_us=5_000_000)
    assert {m.memory_id for m in early} == {f"mem_{i}" for i in range(5)}
    window = index.search("coffee", 50, after_us=3_000_000, before_us=25_000_000)
    assert {m.memory_id for m in window} == {f"mem_{i}" for i in range(15, 25)}
    everything = SideDatabase(tmp_path / "keywords.sqlite3")
    assert len(everything.search("coffee", 50)) == 30


def test_keyword_scores_are_the_same_held_or_asked_and_follow_every_write(tmp_path: Path) -> None:
    """A search asks SQLite to score its matches until its words' scores are held (in the store's
    idle moments, or at once for a rare word); held or asked, the matches, their scores and their
    order are the same, and a write is seen by the next search."""
    index = SideDatabase(tmp_path / "keywords.sqlite3", scored_rows=120)
    with index.transaction() as tx:
        for i in range(1_200):  # coffee and garden in 200 memories each (past the rare, under the common)
            body = ["We drank coffee in the garden", "Coffee beans for the office", "The garden needs rain"][i % 12 % 3]
            tx.add(
                f"mem_{i:04d}",
                i,
                (body if i % 12 < 3 else "Some other note") + (" before the Lisbon trip" if i % 250 == 0 else ""),
            )
    scorings: list[str] = []
    index._conn.set_trace_callback(lambda sql: scorings.append(sql) if "bm25" in sql else None)

    def searches() -> list[list[tuple[str, float]]]:
        found = [index.search(q, 50) for q in ("coffee garden", "coffee Lisbon", "garden rain", "Lisbon")]
        found.append(index.search_words(["garden", "coffee"], 20, body_only=True))
        return [[(m.memory_id, m.score) for m in matches] for matches in found]

    asked = searches()
    assert len(scorings) == 5 + 1  # "Lisbon" is rare: held at once, then its search
    while index.idle_step():
        pass
    scorings.clear()
    assert searches() == asked and not scorings  # held: no scoring by SQLite
    assert asked[1][0][0] in {"mem_0000", "mem_0250", "mem_0500", "mem_0750", "mem_1000"}
    assert all(score > 0 for matches in asked for _, score in matches)
    assert "mem_1188" in {mid for mid, _ in asked[0]}

    with index.transaction() as tx:
        tx.add("mem_new", 1_000, "Coffee with Marco in the garden")
        tx.delete("mem_1188")
    after = searches()
    assert scorings and after != asked
    assert "mem_new" in {mid for mid, _ in after[0]} and "mem_1188" not in {
        mid for matches in after for mid, _ in matches
    }
    while index.idle_step():
        pass
    scorings.clear()
    assert searches() == after and not scorings
