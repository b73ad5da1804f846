"""The store stack is typed: every interface method is written out once in the layers' base, each
is a read or a write, and no write reaches a store without the file share's writer lease."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from symbiote.azure.guard import GuardedHistory, GuardedStore, WriteGate
from symbiote.errors import StoreUnavailableError
from symbiote.storage.base import LIFECYCLE_METHODS, READ_METHODS, WRITE_METHODS, HistoryStore, MemoryStore
from symbiote.storage.chroma.history import HISTORY_READ_METHODS, HISTORY_WRITE_METHODS
from symbiote.storage.chroma.process import RemoteHistory, RemoteStore
from symbiote.storage.layers import HistoryLayer, Layer, StoreLayer
from symbiote.storage.opening import ResetGuard, ResetHistoryGuard, StoreResetError


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


class _Recorder:
    """Any store: records which methods were called and answers None."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.writes_held: list[str] = []
        self.depth = 0

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def __getattr__(self, name: str) -> Callable[..., Any]:  # a test double may be a proxy
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


def _arguments(cls: type, name: str) -> tuple[Any, ...]:
    code = getattr(cls, name).__code__
    return (None,) * (code.co_argcount - 1)


def test_every_method_is_classed_once_and_written_out_in_the_layer() -> None:
    assert READ_METHODS.isdisjoint(WRITE_METHODS) and LIFECYCLE_METHODS.isdisjoint(READ_METHODS | WRITE_METHODS)
    assert _members(MemoryStore) == READ_METHODS | WRITE_METHODS | LIFECYCLE_METHODS
    # The lifecycle (closing, the writer's lease) is written once for both, in `Layer`.
    assert set(vars(Layer)) >= LIFECYCLE_METHODS
    assert _members(MemoryStore) <= set(vars(StoreLayer)) | set(vars(Layer))
    assert _members(HistoryStore) == HISTORY_READ_METHODS | HISTORY_WRITE_METHODS | LIFECYCLE_METHODS
    assert _members(HistoryStore) <= set(vars(HistoryLayer)) | set(vars(Layer))
    for layer in (Layer, StoreLayer, HistoryLayer, ResetGuard, GuardedStore, RemoteStore, RemoteHistory):
        assert "__getattr__" not in vars(layer)


@pytest.mark.parametrize(
    ("layer", "writes", "reads"),
    [(StoreLayer, WRITE_METHODS, READ_METHODS), (HistoryLayer, HISTORY_WRITE_METHODS, HISTORY_READ_METHODS)],
)
def test_the_layer_sends_writes_through_write_and_reads_through_read(
    layer: type, writes: frozenset[str], reads: frozenset[str]
) -> None:
    routed: list[tuple[str, str]] = []

    class Routing(layer):  # type: ignore[misc, valid-type]
        def _read(self, op: Callable[..., Any], *args: Any) -> Any:
            routed.append(("read", op.__name__))

        def _write(self, op: Callable[..., Any], *args: Any) -> Any:
            routed.append(("write", op.__name__))

    store = Routing()
    for name in sorted(writes | reads):
        getattr(store, name)(*_arguments(layer, name))
    assert sorted(routed) == sorted([("write", n) for n in writes] + [("read", n) for n in reads])


def test_the_guard_refuses_every_write_without_the_lease_and_lets_reads_through(tmp_path: Path) -> None:
    (tmp_path / "chroma.sqlite3").write_bytes(b"")
    inner = _Recorder()
    guarded = GuardedStore(lambda: inner, _Refusing(), WriteGate(), tmp_path)  # type: ignore[arg-type]
    for name in sorted(WRITE_METHODS):
        with pytest.raises(StoreUnavailableError):
            getattr(guarded, name)(*_arguments(StoreLayer, name))
    assert inner.calls == []
    for name in sorted(READ_METHODS):
        getattr(guarded, name)(*_arguments(StoreLayer, name))
    assert sorted(inner.calls) == sorted(READ_METHODS)
    history = GuardedHistory(lambda: inner, _Refusing(), WriteGate(), tmp_path)  # type: ignore[arg-type]
    for name in sorted(HISTORY_WRITE_METHODS):
        with pytest.raises(StoreUnavailableError):
            getattr(history, name)(*_arguments(HistoryLayer, name))
    assert sorted(inner.calls) == sorted(READ_METHODS)  # no history write reached the store


def test_a_write_through_the_guard_holds_the_gate(tmp_path: Path) -> None:
    inner = _Recorder()
    gate = WriteGate()
    guarded = GuardedStore(lambda: inner, None, gate, tmp_path)  # type: ignore[arg-type]
    seen: list[int] = []
    inner.add = lambda *args: seen.append(gate.writes_in_flight)  # type: ignore[method-assign]
    guarded.add(*_arguments(StoreLayer, "add"))
    assert seen == [1]


def test_the_reset_check_refuses_every_call_but_close_once_the_directory_moved(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    inner = _Recorder()
    store, history = ResetGuard(inner, data), ResetHistoryGuard(inner, data)  # type: ignore[arg-type]
    store.count()
    data.rename(tmp_path / "aside")
    data.mkdir()
    for name in sorted(READ_METHODS | WRITE_METHODS):
        with pytest.raises(StoreResetError):
            getattr(store, name)(*_arguments(StoreLayer, name))
    with pytest.raises(StoreResetError):
        history.add(*_arguments(HistoryLayer, "add"))
    store.close()
    history.close()
    assert inner.calls == ["count", "close", "close"]


async def test_history_writes_go_through_store_io_and_retry_a_busy_store() -> None:
    """Conversation history calls its store the way the engine does (`StoreIO`): inside the store's
    `writing()`, with a locked database retried rather than reported."""
    import numpy as np

    from symbiote.memory import ConversationHistory
    from symbiote.storage.base import StoredTurn

    class Embedder:
        async def embed(self, texts: list[str], urgent: bool = False) -> list[Any]:
            return [np.zeros(384, dtype=np.float32) for _ in texts]

    class Busy:
        def __init__(self) -> None:
            self.attempts = 0
            self.held: list[bool] = []
            self.depth = 0

        @contextlib.contextmanager
        def writing(self) -> Iterator[None]:
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1

        def add(self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: Any, index: Any) -> Any:
            self.attempts += 1
            self.held.append(self.depth == 1)
            if self.attempts == 1:
                raise RuntimeError("database is locked")
            return StoredTurn(conversation, 0, role, text, ts), True

    store = Busy()
    history = ConversationHistory(Embedder(), lambda model, dimension: store)  # type: ignore[arg-type, return-value]
    appended = await history.append("c1", "user", "hello")
    assert appended.status == "appended" and store.attempts == 2 and store.held == [True, True]
