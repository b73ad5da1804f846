"""A writer stopped at a known point: the real store, whose first call of one of its methods (a
write, or a read a change makes) waits at the store until the test lets it go. What the writer
read is then certainly read, and what it writes not yet written, when the test starts the next."""

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


def every(_args: tuple[Any, ...]) -> bool:
    return True


@dataclass
class Held:
    method: str  # the store method held (`MemoryStore`'s name for it)
    which: Callable[[tuple[Any, ...]], bool] = every  # of its calls, by their arguments, those that count
    armed: bool = True  # off while the test sets up what it needs
    arrived: threading.Event = field(default_factory=threading.Event)  # the writer is at the call, held
    release: threading.Event = field(default_factory=threading.Event)  # set by the test: let it go on

    def holds(self, name: str, args: tuple[Any, ...]) -> bool:
        if name != self.method or not self.armed or self.arrived.is_set():
            return False
        return self.which(args)


def hold_first(monkeypatch: pytest.MonkeyPatch, method: str, which: Callable[[tuple[Any, ...]], bool] = every) -> Held:
    """Every store opened by a runtime built after this (in this process: `store_process=False`,
    or a Chroma server's) holds the first call of `method` that `which` takes, until `release` is set."""
    held = Held(method, which)

    class HeldLocal(Local[MemoryStore]):
        def call(self, op: Callable[Concatenate[MemoryStore, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
            if held.holds(op.__name__, args):
                held.arrived.set()
                held.release.wait(HELD_SECONDS)
            return super().call(op, *args, **kwargs)

    monkeypatch.setattr(symbiote.runtime, "Local", HeldLocal)
    return held


def text_change(args: tuple[Any, ...]) -> bool:
    """`replace` with new text (its vectors given), not metadata alone."""
    return args[1] is not None


def metadata_change(args: tuple[Any, ...]) -> bool:
    return args[1] is None
