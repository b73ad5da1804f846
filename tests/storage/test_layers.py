"""The store stack is typed: every interface method is written out once in the layers' base, each
is a read or a write, and no write reaches a store without the file share's writer lease.

Whether a method reads or writes is declared once, where the layer writes it out (`_read` or
`_write`); the tests learn it from there (`_classes`), so no second list can disagree with it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from symbiote.azure import GuardedHistory, GuardedStore, WriteGate
from symbiote.errors import StoreUnavailableError
from symbiote.storage import (
    HistoryLayer,
    HistoryStore,
    Layer,
    MemoryStore,
    ResetGuard,
    ResetHistoryGuard,
    StoreLayer,
    StoreResetError,
)
from symbiote.storage.chroma import RemoteHistory, RemoteStore

LIFECYCLE_METHODS = frozenset({"writing", "close"})  # written once for both interfaces, in `Layer`


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def _arguments(cls: type, name: str) -> tuple[Any, ...]:
    code = getattr(cls, name).__code__
    return (None,) * (code.co_argcount - 1)


class _Naming:
    """Any store: records the name of the method a layer's call asks of it, as `kind`."""

    def __init__(self, routed: dict[str, str], kind: str) -> None:
        self.routed, self.kind = routed, kind

    def __getattr__(self, name: str) -> Callable[..., None]:  # a test double may be a proxy
        self.routed[name] = self.kind
        return lambda *args: None


def _classes(layer: type, protocol: type) -> dict[str, str]:
    """Each of the interface's methods, "read" or "write", as the layer sends it: the one declaration."""
    routed: dict[str, str] = {}

    class Routing(layer):  # type: ignore[misc, valid-type]
        def _read(self, call: Callable[[Any], Any]) -> Any:
            return call(_Naming(routed, "read"))

        def _write(self, call: Callable[[Any], Any]) -> Any:
            return call(_Naming(routed, "write"))

    store = Routing()
    for name in sorted(_members(protocol) - LIFECYCLE_METHODS):
        getattr(store, name)(*_arguments(layer, name))
    return routed


def _of(layer: type, protocol: type, kind: str) -> list[str]:
    return sorted(name for name, found in _classes(layer, protocol).items() if found == kind)


WRITE_METHODS = _of(StoreLayer, MemoryStore, "write")
READ_METHODS = _of(StoreLayer, MemoryStore, "read")
HISTORY_WRITE_METHODS = _of(HistoryLayer, HistoryStore, "write")


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


def test_every_method_is_classed_once_and_written_out_in_the_layer() -> None:
    # Each method of each interface goes through exactly one of `_read` and `_write`, naming itself.
    for layer, protocol in ((StoreLayer, MemoryStore), (HistoryLayer, HistoryStore)):
        assert set(_classes(layer, protocol)) == _members(protocol) - LIFECYCLE_METHODS
        assert _members(protocol) <= set(vars(layer)) | set(vars(Layer))
    # The lifecycle (closing, the writer's lease) is written once for both, in `Layer`.
    assert set(vars(Layer)) >= LIFECYCLE_METHODS
    assert WRITE_METHODS and READ_METHODS and HISTORY_WRITE_METHODS == ["add", "delete_conversation"]
    for layer in (Layer, StoreLayer, HistoryLayer, ResetGuard, GuardedStore, RemoteStore, RemoteHistory):
        assert "__getattr__" not in vars(layer)
    # The stores in the store's process: every method written out, typed, as the call it sends.
    assert _members(MemoryStore) - LIFECYCLE_METHODS <= set(vars(RemoteStore))
    assert _members(HistoryStore) - LIFECYCLE_METHODS <= set(vars(RemoteHistory))


def test_the_guard_refuses_every_write_without_the_lease_and_lets_reads_through(tmp_path: Path) -> None:
    (tmp_path / "chroma.sqlite3").write_bytes(b"")
    inner = _Recorder()
    guarded = GuardedStore(lambda: inner, _Refusing(), WriteGate(), tmp_path)  # type: ignore[arg-type]
    for name in WRITE_METHODS:
        with pytest.raises(StoreUnavailableError):
            getattr(guarded, name)(*_arguments(StoreLayer, name))
    assert inner.calls == []
    for name in READ_METHODS:
        getattr(guarded, name)(*_arguments(StoreLayer, name))
    assert sorted(inner.calls) == READ_METHODS
    history = GuardedHistory(lambda: inner, _Refusing(), WriteGate(), tmp_path)  # type: ignore[arg-type]
    for name in HISTORY_WRITE_METHODS:
        with pytest.raises(StoreUnavailableError):
            getattr(history, name)(*_arguments(HistoryLayer, name))
    assert sorted(inner.calls) == READ_METHODS  # no history write reached the store


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
    for name in sorted(READ_METHODS + WRITE_METHODS):
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
