"""The embedded Chroma runs in a process of its own: it survives being killed, and never outlives the server."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from symbiote.config import Settings
from symbiote.memory import SearchRequest, StoreRequest
from symbiote.storage.base import MemoryStore
from symbiote.storage.chroma.process import StoreProcess
from tests.conftest import ServerProcess, make_runtime


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is our own child
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


async def test_a_killed_store_process_is_replaced_and_nothing_is_lost(settings: Settings) -> None:
    runtime = make_runtime(replace(settings, store_process=True))
    engine, history = runtime.engine, runtime.history
    assert history is not None
    try:
        stored = await engine.store(StoreRequest("The spare key is under the blue flowerpot"))
        await history.history.append("c1", "user", "where did I put the key?")
        host = runtime.store_process
        assert host is not None
        first = host.pid
        assert first is not None and first != os.getpid()
        os.kill(first, signal.SIGKILL)
        assert _gone(first, 5)
        hits = (await engine.search(SearchRequest("where is the spare key?"))).results
        assert [h.memory_id for h in hits][:1] == [stored.memory_id]
        assert [t.text for t in (await history.history.get("c1")).turns] == ["where did I put the key?"]
        assert host.pid not in (None, first)
        assert (await engine.store(StoreRequest("Stored after the restart"))).status == "stored"
        assert (await engine.stats()).total_memories == 2
    finally:
        engine.close()
    assert host.pid is None  # closed with the engine


def test_the_store_process_ends_with_the_server(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from symbiote.storage.chroma.process import StoreProcess
        host = StoreProcess(Path({str(tmp_path / "data")!r}))
        host.memories("all-MiniLM-L6-v2", 384)
        print(host.pid, flush=True)
        os.kill(os.getpid(), 9)  # the server dies without closing anything
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip(), done.stderr[-2000:]
    child = int(done.stdout.split()[0])
    assert _gone(child, 10), "the store process outlived the server"


@pytest.mark.server("the transport is the point: idle keep-alive connections on the real socket")
def test_idle_keep_alive_connections_outlive_the_clients_own_expiry(fresh_server: ServerProcess) -> None:
    """Clients drop idle connections after 5 s (httpx); the server must not close them first, or a
    legacy-SSE POST can land on a closing connection and the SDK ends the whole session."""
    connection = http.client.HTTPConnection("127.0.0.1", fresh_server.port, timeout=10)
    try:
        connection.request("GET", "/health")
        assert connection.getresponse().read()
        time.sleep(6)
        connection.request("GET", "/health")  # same socket: http.client does not reconnect by itself
        response = connection.getresponse()
        assert response.status == 200 and response.read()
    finally:
        connection.close()


def test_the_store_process_can_be_turned_off() -> None:
    assert Settings.from_env({}).store_process is True
    assert Settings.from_env({"SYMBIOTE_STORE_PROCESS": "off"}).store_process is False
    with pytest.raises(Exception, match="SYMBIOTE_STORE_PROCESS"):
        Settings.from_env({"SYMBIOTE_STORE_PROCESS": "sometimes"})


def test_sigterm_to_every_process_is_left_to_the_server(tmp_path: Path) -> None:
    """systemd and container runtimes may signal the whole group: the store must stay up until the
    server, shutting down gracefully, has finished its writes and closes it."""
    host = StoreProcess(tmp_path / "data")
    try:
        store = host.memories("all-MiniLM-L6-v2", 384)
        assert host.pid is not None
        os.kill(host.pid, signal.SIGTERM)
        os.kill(host.pid, signal.SIGINT)
        time.sleep(0.3)
        assert store.call(MemoryStore.count) == 0  # still answering
    finally:
        host.close()
    assert host.pid is None


def test_a_preopened_store_is_the_one_handed_out(tmp_path: Path) -> None:
    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME

    host = StoreProcess(tmp_path / "data")
    try:
        host.preopen("memories", MODEL_NAME, MODEL_DIMENSION)  # opens as soon as Chroma is imported
        store = host.memories(MODEL_NAME, MODEL_DIMENSION)
        assert store.call(MemoryStore.count) == 0
        again = host.memories(MODEL_NAME, MODEL_DIMENSION)  # a second open is a plain open
        assert again.call(MemoryStore.count) == 0
    finally:
        host.close()


def test_a_new_store_made_ahead_is_copied_in_by_the_first_operation(tmp_path: Path) -> None:
    """The data directory gets nothing until the first memory operation, which then finds the
    catalogue made already (elsewhere); the store works as one made on the spot."""
    import tempfile

    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME
    from symbiote.storage.base import CHROMA_FILE, StoredMemory

    data = tmp_path / "new" / "data"
    host = StoreProcess(data)

    def made() -> list[Path]:  # this store process's only: other servers on the machine make their own
        return list(Path(tempfile.gettempdir()).glob(f"symbiote-new-store-{pid}-*"))

    try:
        host.make_ahead(MODEL_NAME, MODEL_DIMENSION)
        host.ping()
        pid = host.pid
        deadline = time.monotonic() + 30
        while not made():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not (tmp_path / "new").exists()  # made elsewhere: not even the directory
        store = host.memories(MODEL_NAME, MODEL_DIMENSION)
        assert (data / CHROMA_FILE).is_file() and store.call(MemoryStore.count) == 0
        memory = StoredMemory("mem_00000000000000000001", "I keep bees", "2026-11-27T00:00:00Z", 1, ())
        import numpy as np

        store.call(MemoryStore.add, memory, np.ones((1, MODEL_DIMENSION), dtype=np.float32), [memory.content])
        assert (
            store.call(MemoryStore.count) == 1
            and store.call(MemoryStore.keyword, "bees", 3)[0].memory_id == memory.memory_id
        )
    finally:
        host.close()
    assert not made()  # removed once used
    again = StoreProcess(data)
    try:
        assert again.memories(MODEL_NAME, MODEL_DIMENSION).call(MemoryStore.count) == 1
    finally:
        again.close()


def test_stores_made_ahead_by_processes_that_are_gone_are_removed() -> None:
    """A server killed before its first memory operation leaves its store made ahead: the next
    start removes it, and never one a live process made."""
    import tempfile

    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME
    from symbiote.storage.chroma.opening import AHEAD_PREFIX, discard_ahead, make_ahead

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    temporary = Path(tempfile.gettempdir())
    left = temporary / f"{AHEAD_PREFIX}{int(gone.stdout)}-test"
    live = temporary / f"{AHEAD_PREFIX}{os.getpid()}-test"
    for made in (left, live):
        (made / "data").mkdir(parents=True, exist_ok=True)
    try:
        ahead = make_ahead(MODEL_NAME, MODEL_DIMENSION)
        assert not left.exists() and live.exists() and ahead.is_dir()
        discard_ahead(ahead)
        assert not ahead.parent.exists()
    finally:
        discard_ahead(live / "data")
        discard_ahead(left / "data")


def test_a_preopen_that_failed_is_opened_again_and_says_why(tmp_path: Path) -> None:
    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME

    data = tmp_path / "data"
    host = StoreProcess(data)
    try:
        host.memories(MODEL_NAME, MODEL_DIMENSION)
    finally:
        host.close()
    host = StoreProcess(data)
    try:
        host.preopen("memories", "another-model", 768)
        with pytest.raises(Exception, match="another-model|768"):
            host.memories("another-model", 768)
        assert host.memories(MODEL_NAME, MODEL_DIMENSION).call(MemoryStore.count) == 0  # the process still serves
    finally:
        host.close()


def test_only_data_crosses_into_the_store_process(tmp_path: Path) -> None:
    """The store process unpickles no Symbiote class above storage: code of another layer (here
    retrieval's) is refused, and the process keeps serving."""
    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME
    from symbiote.retrieval import ranking
    from symbiote.storage import RemoteStoreError

    host = StoreProcess(tmp_path / "data")
    try:
        store = host.memories(MODEL_NAME, MODEL_DIMENSION)
        with pytest.raises(RemoteStoreError, match="symbiote.retrieval.ranking.fuse is not the store's"):
            store.call(MemoryStore.get, [ranking.fuse])  # type: ignore[list-item]
        assert store.call(MemoryStore.get, []) == {} and store.call(MemoryStore.count) == 0
    finally:
        host.close()


def test_a_store_that_fails_to_open_imports_neither_chroma_nor_numpy_in_the_server(tmp_path: Path) -> None:
    """Chroma's own error is sent as text: unpickled as itself it imported chromadb, and numpy with it,
    in the thread that asked, beside the model's thread importing numpy (3 of 6 starts on a damaged
    store exited with "partially initialized module 'numpy._typing'")."""
    import sqlite3

    from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME

    data = tmp_path / "data"
    host = StoreProcess(data)
    try:
        host.memories(MODEL_NAME, MODEL_DIMENSION)
    finally:
        host.close()
    with sqlite3.connect(data / "chroma.sqlite3") as chroma:  # a table Chroma reads at open, gone
        chroma.execute("DROP TABLE collections")
    chroma.close()
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from symbiote.storage.chroma.process import StoreProcess
        host = StoreProcess(Path({str(data)!r}))
        try:
            host.memories({MODEL_NAME!r}, {MODEL_DIMENSION})
        except Exception as exc:
            print(type(exc).__name__, exc)
        finally:
            host.close()
        print(sorted(name for name in ("chromadb", "numpy") if name in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    failure, imported = done.stdout.strip().splitlines()[-2:]
    assert failure.startswith("RemoteStoreError") and "no such table: collections" in failure
    assert imported == "[]"
