"""A tag filter matches tags whatever their case, while what is stored keeps its spelling: the
filter names every stored spelling for Chroma's exact `$contains`."""

from __future__ import annotations

from symbiote.storage.base import StoredMemory
from symbiote.storage.filters import MemoryFilter


def memory(*tags: str) -> StoredMemory:
    return StoredMemory("mem_1", "text", "2026-11-26T10:00:00Z", 0, tags)


def test_a_filter_names_every_stored_spelling_of_its_tags() -> None:
    where = MemoryFilter(tags=("WORK",)).spelled(["work", "Work", "home", "WORK"])
    assert where.spellings == ("work", "Work")
    assert where.chroma_where() == {
        "$or": [{"tags": {"$contains": "WORK"}}, {"tags": {"$contains": "work"}}, {"tags": {"$contains": "Work"}}]
    }
    assert where.matches(memory("Work")) and where.matches(memory("work")) and not where.matches(memory("home"))


def test_all_of_several_tags_each_in_any_spelling() -> None:
    where = MemoryFilter(tags=("work", "home"), tag_mode="all").spelled(["Work", "HOME", "garden"])
    assert where.chroma_where() == {
        "$and": [
            {"$or": [{"tags": {"$contains": "work"}}, {"tags": {"$contains": "Work"}}]},
            {"$or": [{"tags": {"$contains": "home"}}, {"tags": {"$contains": "HOME"}}]},
        ]
    }
    assert where.matches(memory("Work", "HOME")) and not where.matches(memory("Work"))


def test_without_tags_or_other_spellings_the_filter_is_as_before() -> None:
    assert MemoryFilter().spelled(["work"]) == MemoryFilter()
    assert MemoryFilter(tags=("work",)).spelled(["work"]).chroma_where() == {"tags": {"$contains": "work"}}
    assert MemoryFilter(tags=("a", "b")).chroma_where() == {
        "$or": [{"tags": {"$contains": "a"}}, {"tags": {"$contains": "b"}}]
    }
