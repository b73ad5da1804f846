"""The store's trash on both backends (embedded Chroma, a Chroma server): a trashed memory leaves
the memories, their passages and the keyword index, keeps its record and vector, and comes back
under its id; a purge removes it for good."""

from __future__ import annotations

from tests.chroma_server import backend, chroma_server  # noqa: F401  (fixtures)
from tests.storage.test_backends import Opened, close_what_tests_opened, opened  # noqa: F401  (fixtures)


def test_trash_restore_and_purge(opened: Opened) -> None:
    store = opened.store
    assert store.trashed(0, 10) == ([], 0) and store.restore(["mem_1"]) == [] and store.purge(["mem_1"]) == []
    gone = opened.add("The dentist appointment is on Friday. Bring the insurance card.", ("health",))
    kept = opened.add("The user's cat is called Miso")
    other = opened.add("The bike lock code is kept in the password manager")
    assert store.trash([gone.memory_id, other.memory_id, "mem_2"], "owner", 1_000) == [gone.memory_id, other.memory_id]
    assert store.get([gone.memory_id]) == {} and store.count() == 1
    assert gone.memory_id not in [m.memory_id for m in store.nearest(opened.vector("insurance card"), 5)]
    assert gone.memory_id not in [m.memory_id for m in store.keyword("dentist insurance", 5)]
    items, total = store.trashed(0, 1)
    assert total == 2 and len(items) == 1 and items[0].deleted_us == 1_000 and items[0].deleted_by == "owner"

    assert store.restore([gone.memory_id]) == [gone.memory_id]
    back = store.get([gone.memory_id])[gone.memory_id]
    assert (back.content, back.tags, back.created_us, back.timestamp) == (
        gone.content,
        gone.tags,
        gone.created_us,
        gone.timestamp,
    )
    assert [m.memory_id for m in store.keyword("dentist insurance", 5)][:1] == [gone.memory_id]
    assert (
        store.nearest(opened.vector("dentist appointment on Friday"), 1, passages=False)[0].memory_id == gone.memory_id
    )
    assert [mid for mid, _windows, _text in store.pending_passages(10)] == [gone.memory_id]  # embedded again
    assert store.purge([other.memory_id, kept.memory_id]) == [other.memory_id]
    assert store.trashed(0, 10) == ([], 0) and store.count() == 2
