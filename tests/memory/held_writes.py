"""A writer stopped at a known point: the real store, whose first call of one of its writes waits
at the store until the test lets it go. What the first writer read is then certainly read, and
what it writes not yet written, when the test starts the second."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

import pytest

import symbiote.runtime
from symbiote.storage import Local, MemoryStore

P = ParamSpec("P")
T = TypeVar("T")
HELD_SECONDS = 60  # a test that never lets go fails rather than hangs


@dataclass
class Held:
    write: str  # the store method held (`MemoryStore`'s name for it)
    with_vectors: bool | None  # `replace` only: hold the text's change (True) or the metadata's (False)
    armed: bool = True  # off while the test sets up what it needs
    arrived: threading.Event = field(default_factory=threading.Event)  # the first writer is at the write
    release: threading.Event = field(default_factory=threading.Event)  # set by the test: let it write

    def holds(self, name: str, args: tuple[Any, ...]) -> bool:
        if name != self.write or not self.armed or self.arrived.is_set():
            return False
        return self.with_vectors is None or (args[1] is not None) == self.with_vectors


def hold_first(monkeypatch: pytest.MonkeyPatch, write: str, with_vectors: bool | None = None) -> Held:
    """Every store opened by a runtime built after this (in this process: `store_process=False`)
    holds the first call of `write` until `release` is set."""
    held = Held(write, with_vectors)

    class HeldLocal(Local[MemoryStore]):
        def call(self, op: Callable[Concatenate[MemoryStore, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
            if held.holds(op.__name__, args):
                held.arrived.set()
                held.release.wait(HELD_SECONDS)
            return super().call(op, *args, **kwargs)

    monkeypatch.setattr(symbiote.runtime, "Local", HeldLocal)
    return held
