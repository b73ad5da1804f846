"""How the engine calls a store (`symbiote.storage.base.Reach`): every call as the interface's own
method, through one `call` per kind of reach; which calls write is one table (`WRITES`), and no
write reaches a store without the file share's writer lease or after a reset."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from symbiote.azure import LeaseGuard, WriteGate
from symbiote.errors import StoreUnavailableError
from symbiote.storage import WRITES, HistoryStore, Local, MemoryStore, Reach, ResetGuard, StoreResetError, is_write
from symbiote.storage.chroma import Remote


def _members(protocol: type) -> list[Any]:
    return [value for name, value in vars(protocol).items() if not name.startswith("_") and callable(value)]


def _arguments(op: Any) -> tuple[Any, ...]:
    return (None,) * (len(inspect.signature(op).parameters) - 1)


class _Recorder:
    """Any store: records the name of each method called (a test double may be a proxy)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> None:
            self.calls.append(name)

        return call


class _Refusing:
    """A writer lease that is never held: every write is refused."""

    held = False
    generation = 0

    def check_writable(self) -> None:
        raise StoreUnavailableError("not the writer")

    def refusal(self) -> str:
        return "not the writer"


MEMORY_OPS = _members(MemoryStore)
HISTORY_OPS = _members(HistoryStore)


def test_the_writes_table_names_methods_of_the_interfaces_and_every_other_method_reads() -> None:
    names = {op.__name__ for op in MEMORY_OPS + HISTORY_OPS}
    assert WRITES <= names
    assert {op.__name__ for op in HISTORY_OPS if is_write(op)} == {"add", "delete_conversation"}
    assert not any(is_write(op) for op in MEMORY_OPS if op.__name__.startswith(("get", "find", "count", "search")))
    for reach in (Reach, Local, Remote, ResetGuard, LeaseGuard):
        assert "__getattr__" not in vars(reach) and set(vars(reach)) & names <= {
            "close"
        }  # one `call`, no method per method


def test_the_guard_refuses_every_write_without_the_lease_and_lets_reads_through(tmp_path: Path) -> None:
    (tmp_path / "chroma.sqlite3").write_bytes(b"")
    inner = _Recorder()
    guarded: LeaseGuard[MemoryStore] = LeaseGuard(lambda: Local(inner), _Refusing(), WriteGate(), tmp_path)  # type: ignore[arg-type]
    for op in MEMORY_OPS:
        if is_write(op):
            with pytest.raises(StoreUnavailableError):
                guarded.call(op, *_arguments(op))
    assert inner.calls == []
    for op in MEMORY_OPS:
        if not is_write(op):
            guarded.call(op, *_arguments(op))
    assert sorted(inner.calls) == sorted(op.__name__ for op in MEMORY_OPS if not is_write(op))


def test_a_write_through_the_guard_holds_the_gate(tmp_path: Path) -> None:
    gate = WriteGate()
    seen: list[int] = []

    class Store(_Recorder):
        def add(self, *args: Any) -> None:
            seen.append(gate.writes_in_flight)

    guarded: LeaseGuard[MemoryStore] = LeaseGuard(lambda: Local(Store()), None, gate, tmp_path)  # type: ignore[arg-type]
    guarded.call(MemoryStore.add, *_arguments(MemoryStore.add))
    assert seen == [1]


def test_the_reset_check_refuses_every_call_but_close_once_the_directory_moved(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    inner = _Recorder()
    checked: ResetGuard[MemoryStore] = ResetGuard(Local(inner), data)  # type: ignore[arg-type]
    checked.call(MemoryStore.count)
    data.rename(tmp_path / "aside")
    data.mkdir()
    for op in MEMORY_OPS:
        with pytest.raises(StoreResetError):
            checked.call(op, *_arguments(op))
    checked.close()
    assert inner.calls == ["count", "close"]


async def test_store_io_sends_a_read_as_a_read_and_a_write_as_a_write() -> None:
    from symbiote.memory.store_io import StoreIO

    inner = _Recorder()
    io: StoreIO[MemoryStore] = StoreIO(lambda model, dimension: Local(inner), None)  # type: ignore[arg-type]
    try:
        await io.read(MemoryStore.count)
        await io.write(MemoryStore.delete, "mem_17961569649291019792")
        with pytest.raises(AssertionError):
            await io.read(MemoryStore.delete, "mem_17961569649291019792")
        with pytest.raises(AssertionError):
            await io.write(MemoryStore.count)
    finally:
        io.shutdown()
    assert inner.calls == ["count", "delete", "close"]


async def test_history_writes_go_through_store_io_and_retry_a_busy_store() -> None:
    """Conversation history calls its store the way the engine does (`StoreIO`): a locked database is
    retried rather than reported."""
    import numpy as np

    from symbiote.memory import ConversationHistory
    from symbiote.storage.base import StoredTurn

    class Embedder:
        async def embed(self, texts: list[str], urgent: bool = False) -> list[Any]:
            return [np.zeros(384, dtype=np.float32) for _ in texts]

    class Busy:
        def __init__(self) -> None:
            self.attempts = 0

        def add(self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: Any, index: Any) -> Any:
            self.attempts += 1
            if self.attempts == 1:
                raise RuntimeError("database is locked")
            return StoredTurn(conversation, 0, role, text, ts), True

        def close(self) -> None:
            pass

    store = Busy()
    history = ConversationHistory(Embedder(), lambda model, dimension: Local(store))  # type: ignore[arg-type]
    try:
        appended = await history.append("c1", "user", "hello")
    finally:
        history.close()
    assert appended.status == "appended" and store.attempts == 2
