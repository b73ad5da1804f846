"""The stores living in the store's process (`symbiote.storage.chroma.process`), as the server reaches them.

A call crosses as the interface's method's name and its arguments, pickled; the child calls that
method of the store it hosts (it refuses a name the interface does not have). `Remote.call` is
typed by the interface's method (ParamSpec), so a type checker follows every call to
`MemoryStore` or `HistoryStore`. Writes hold nothing here: a guard above (the file share's writer
lease) holds what a write needs; the child does its idle work between calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate

from symbiote.storage.base import P, Reach, S, T

if TYPE_CHECKING:
    from symbiote.storage.chroma.process import StoreProcess


class Remote(Reach[S]):
    """A store object living in the child, by its handle."""

    def __init__(self, host: StoreProcess, handle: int) -> None:
        self._host = host
        self._handle = handle

    def call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = self._host.call(self._handle, op.__name__, args, kwargs)
        return result

    def close(self) -> None:
        """Close this store's Chroma client in the child (e.g. to reopen it after a new writer took over)."""
        self._host.forget(self._handle)
