"""Where recorded handshakes live (`symbiote.fastboot.cache_files`): the data directory and the user's cache."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from symbiote.config import Settings
from symbiote.fastboot import cache_files

NAME = "handshake-cache.json"


def recording(print_: str) -> dict[str, object]:
    return {"format": 1, "fingerprint": print_, "replies": {}}


def test_a_recording_is_found_from_another_data_directory(settings: Settings, own_user_cache: Path) -> None:
    assert cache_files.write(settings, NAME, recording("a" * 64)) == settings.chromadb_path / NAME
    elsewhere = dataclasses.replace(settings, chromadb_path=settings.chromadb_path.parent / "elsewhere")
    assert cache_files.read(elsewhere, NAME, 1, "a" * 64) == recording("a" * 64)
    assert cache_files.read(elsewhere, NAME, 1, "b" * 64) is None, "another fingerprint: not this one"
    assert cache_files.read(elsewhere, NAME, 2, "a" * 64) is None, "another format: not this one"
    cache_files.forget(settings, NAME, "a" * 64)
    assert (
        cache_files.read(settings, NAME, 1, "a" * 64) is None and cache_files.read(elsewhere, NAME, 1, "a" * 64) is None
    )


def test_an_unwritable_data_directory_still_leaves_the_users_copy(
    tmp_path: Path, settings: Settings, own_user_cache: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    unwritable = dataclasses.replace(settings, chromadb_path=blocker / "data")
    where = cache_files.write(unwritable, NAME, recording("c" * 64))
    assert where is not None and where.is_relative_to(own_user_cache), "kept in the user's cache instead"
    assert cache_files.read(unwritable, NAME, 1, "c" * 64) == recording("c" * 64)


def test_forgetting_leaves_a_newer_recording(settings: Settings, own_user_cache: Path) -> None:
    cache_files.write(settings, NAME, recording("d" * 64))
    cache_files.write(settings, NAME, recording("e" * 64))  # another server's, newer
    cache_files.forget(settings, NAME, "d" * 64)
    assert cache_files.read(settings, NAME, 1, "e" * 64) == recording("e" * 64)
    assert cache_files.read(settings, NAME, 1, "d" * 64) is None


def test_the_user_cache_keeps_the_newest_recordings(settings: Settings, own_user_cache: Path) -> None:
    prints = [f"{i:02d}" * 32 for i in range(cache_files.USER_CACHE_KEEP + 3)]
    past = time.time() - 1000
    for index, print_ in enumerate(prints):
        cache_files.write(settings, NAME, recording(print_))
        for path in (own_user_cache / "symbiote").glob(f"*{print_[:24]}*"):  # distinct, ordered times
            os.utime(path, (past + index, past + index))
    kept = sorted((own_user_cache / "symbiote").glob("handshake-cache-*.json"))
    assert len(kept) == cache_files.USER_CACHE_KEEP
    assert (
        cache_files.read(dataclasses.replace(settings, chromadb_path=Path("/nonexistent")), NAME, 1, prints[-1])
        is not None
    )
    assert (
        cache_files.read(dataclasses.replace(settings, chromadb_path=Path("/nonexistent")), NAME, 1, prints[0]) is None
    )
