"""The data directory records its format: today's code opens what the release of 2026-11-23 wrote
(tests/fixtures/release-4344135, made by tests/fixtures/make_release_4344135.py) and finds all of
it, records format 1 in it, and refuses a directory a newer release wrote without changing a byte.

An owner upgrades by starting the new release on the old directory: nothing else carries their
memories, history, keys and connected apps across, so this is tested on files an old release
really wrote, with the real engine and the real Chroma.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from symbiote.auth import AuthStore, AuthStoreUnavailable, default_auth_db
from symbiote.config import Settings
from symbiote.errors import DataFormatError, StoreUnavailableError
from symbiote.memory import SearchRequest, StoreRequest
from symbiote.runtime import Runtime
from symbiote.storage.data_format import FORMAT_FILE, FORMAT_VERSION, record_format, recorded_format
from tests.conftest import make_runtime

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RELEASE = FIXTURES / "release-4344135"
EXPECTED: dict[str, Any] = json.loads((FIXTURES / "release-4344135.expected.json").read_text())


@pytest.fixture
def old_data(tmp_path: Path) -> Path:
    """A copy: opening a directory may write to it, and the fixture must stay as the release left it."""
    return Path(shutil.copytree(RELEASE, tmp_path / "data"))


@pytest.fixture
async def opened(old_data: Path, settings: Settings) -> AsyncIterator[Runtime]:
    runtime = make_runtime(Settings(chromadb_path=old_data, model_dir=settings.model_dir, store_process=False))
    yield runtime
    runtime.close()


def _fingerprint(path: Path) -> dict[str, str]:
    return {
        str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(path.rglob("*"))
        if f.is_file()
    }


def test_the_fixture_is_what_the_old_release_wrote() -> None:
    """No format file (the release predates it), and every part: Chroma, keywords, sign-ins."""
    assert not (RELEASE / FORMAT_FILE).exists()
    for name in ("chroma.sqlite3", "symbiote_keywords.sqlite3", "symbiote-auth.sqlite3"):
        assert (RELEASE / name).is_file(), name


async def test_every_memory_is_found_by_get_and_by_search(opened: Runtime, old_data: Path) -> None:
    for memory in EXPECTED["memories"]:
        got = await opened.engine.get(memory["memory_id"])
        assert got.content == memory["content"]
        assert got.tags == memory["tags"]
        assert got.type == memory.get("type") and got.confidence == memory.get("confidence")
        assert got.bookmarked == memory.get("bookmarked", False)
        found = await opened.engine.search(SearchRequest(memory["content"]))
        assert found.results and found.results[0].memory_id == memory["memory_id"], memory["content"]
    lisbon = await opened.engine.search(SearchRequest("Lisbon"))  # one word: the keyword index the release wrote
    assert EXPECTED["memories"][0]["memory_id"] in [hit.memory_id for hit in lisbon.results]
    assert recorded_format(old_data) == FORMAT_VERSION  # opening an older directory records format 1


async def test_the_conversation_history_is_there(opened: Runtime) -> None:
    assert opened.history is not None
    history = await opened.history.history.get(EXPECTED["conversation_id"])
    assert [(t.role, t.text, t.turn_index) for t in history.turns] == [
        (t["role"], t["text"], t["turn_index"]) for t in EXPECTED["turns"]
    ]
    hits = await opened.history.history.search("where does my sister live", EXPECTED["conversation_id"])
    assert hits and hits[0].text == EXPECTED["turns"][0]["text"]


def test_the_api_key_and_the_oauth_grant_stay_valid(old_data: Path) -> None:
    store = AuthStore(default_auth_db(old_data))
    try:
        key = store.check_api_key(EXPECTED["api_key"]["key"])
        assert key is not None and key.name == EXPECTED["api_key"]["name"]
        grant = EXPECTED["oauth"]
        access = store.load_token(grant["access_token"], "access")
        assert access is not None and access.client_id == grant["client_id"]
        assert store.load_refresh(grant["refresh_token"]) is not None
        assert store.get_client(grant["client_id"]) is not None
    finally:
        store.close()


def _newer(path: Path) -> None:
    (path / FORMAT_FILE).write_text(json.dumps({"format": FORMAT_VERSION + 1}))


@pytest.mark.parametrize("store_process", [False, True], ids=["in-process", "store-process"])
async def test_a_newer_format_is_refused_and_never_rewritten(
    old_data: Path, settings: Settings, store_process: bool
) -> None:
    """In the server's process and in the store's own (the refusal crosses to the server as itself)."""
    _newer(old_data)
    before = _fingerprint(old_data)
    runtime = make_runtime(Settings(chromadb_path=old_data, model_dir=settings.model_dir, store_process=store_process))
    try:
        with pytest.raises(StoreUnavailableError) as refused:
            await runtime.engine.search(SearchRequest("Lisbon"))
        with pytest.raises(StoreUnavailableError):
            await runtime.engine.store(StoreRequest("a new memory must not be written there"))
        assert runtime.history is not None
        with pytest.raises(StoreUnavailableError):
            await runtime.history.history.append("c1", "user", "nor a turn")
    finally:
        runtime.close()
    message = str(refused.value)
    assert str(old_data / FORMAT_FILE) in message
    assert f"format {FORMAT_VERSION + 1}" in message and f"format {FORMAT_VERSION}," in message
    store = AuthStore(default_auth_db(old_data))
    with pytest.raises(AuthStoreUnavailable, match=FORMAT_FILE):
        store.check_api_key(EXPECTED["api_key"]["key"])
    store.close()
    assert _fingerprint(old_data) == before


def test_a_new_directory_records_the_format(tmp_path: Path) -> None:
    assert recorded_format(tmp_path) is None
    assert record_format(tmp_path) == FORMAT_VERSION
    assert json.loads((tmp_path / FORMAT_FILE).read_text()) == {"format": FORMAT_VERSION}
    assert record_format(tmp_path) == FORMAT_VERSION  # kept, not rewritten


@pytest.mark.parametrize("text", ["not json", '{"version": 1}', '{"format": "1"}', '{"format": 0}', "[1]"])
def test_a_format_file_that_says_nothing_known_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / FORMAT_FILE).write_text(text)
    with pytest.raises(DataFormatError, match=FORMAT_FILE):
        record_format(tmp_path)
    assert (tmp_path / FORMAT_FILE).read_text() == text


async def test_the_server_records_the_format_of_the_directory_it_creates(settings: Settings) -> None:
    runtime = make_runtime(settings)
    try:
        await runtime.engine.store(StoreRequest("the first memory creates the data directory"))
    finally:
        runtime.close()
    assert recorded_format(settings.chromadb_path) == FORMAT_VERSION
