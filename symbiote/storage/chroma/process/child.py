"""The store process's side of `symbiote.storage.chroma.process`: the loop that opens stores and answers calls.

It serves one request at a time, in order, and gives its open objects' idle work (`idle_step`)
the moments when no request waits.
"""

from __future__ import annotations

import io
import logging
import pickle
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from symbiote.errors import SymbioteError
from symbiote.storage.base import HistoryStore, MemoryStore
from symbiote.storage.disk_errors import RemoteStoreError, exception_chain

log = logging.getLogger(__name__)


def _portable(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling and is Python's or Symbiote's own, else its chain as text (what
    `failures` classifies by). Another library's class (Chroma's errors) is never sent as itself:
    unpickling it would import that library in whichever server thread received the answer, beside
    the model's thread importing numpy, and a first import of numpy in two threads at once fails."""
    if not _ours(type(exc)):
        return _as_text(exc)
    try:
        clone = pickle.loads(pickle.dumps(exc))
        if type(clone) is type(exc) and str(clone) == str(exc):
            if exc.__cause__ is None and exc.__context__ is None:
                return exc
    except (pickle.PickleError, TypeError, AttributeError, ValueError):
        pass  # not picklable as it is: sent as text below
    return _as_text(exc)


def _ours(kind: type[BaseException]) -> bool:
    return kind.__module__ == "builtins" or kind.__module__.split(".")[0] == "symbiote"


def _as_text(exc: BaseException) -> BaseException:
    chain = exception_chain(exc)
    text = " <- ".join(f"{type(e).__name__}: {e}" for e in chain)
    errnos = [e.errno for e in chain if isinstance(e, OSError) and e.errno is not None]
    if isinstance(exc, SymbioteError):
        try:
            clone_of_symbiote_error: BaseException = pickle.loads(pickle.dumps(type(exc)(str(exc))))
            return clone_of_symbiote_error
        except (pickle.PickleError, TypeError, AttributeError, ValueError):
            pass  # a SymbioteError with a richer constructor: sent as text below
    return RemoteStoreError(text, errnos[0] if errnos else None)


IDLE_AFTER_SECONDS = 0.05


_AHEAD: dict[tuple[str, int], Path] = {}  # new stores made ahead (`symbiote.storage.chroma.opening.make_ahead`)


class _StorageOnly(pickle.Unpickler):
    """Reads a request: of Symbiote's own classes only storage's and the error tree's, so what crosses
    into this process is data for the store, never another layer's code to run here (a search's
    fusion comes down as `storage.Fusion`; tests/test_layers.py follows this process's imports)."""

    def find_class(self, module: str, name: str, /) -> Any:
        if module.startswith("symbiote") and not module.startswith(("symbiote.storage", "symbiote.errors")):
            raise pickle.UnpicklingError(f"{module}.{name} is not the store's: only data crosses into its process")
        return super().find_class(module, name)


def _receive(conn: Connection) -> tuple[Any, ...]:
    request: tuple[Any, ...] = _StorageOnly(io.BytesIO(conn.recv_bytes())).load()
    return request


# The names a call may ask for: the interfaces' methods (the rest of a store object is its own).
_METHODS = frozenset(name for interface in (MemoryStore, HistoryStore) for name in vars(interface) if name[0] != "_")


class _Served(Protocol):
    """What the loop itself calls on an object it serves (the interfaces' methods are asked for by name)."""

    def idle_step(self) -> bool: ...

    def settle(self) -> None:
        """The writes answered for before they were made (`symbiote.storage.chroma.additions`)."""
        ...

    def defers(self, method: str) -> bool:
        """Whether a call of `method` may be served before `settle`."""
        ...

    def close(self) -> None: ...


def _open(kind: str, path: str, model: str, dimension: int) -> _Served:
    if kind == "memories":
        from symbiote.storage.chroma.opening import discard_ahead, open_embedded_store

        ahead = _AHEAD.pop((model, dimension), None)
        try:
            return open_embedded_store(
                Path(path), model, dimension, vectors_in_memory=True, ahead=ahead, write_behind=True
            )  # the only writer, which settles after every reply
        finally:
            if ahead is not None:
                discard_ahead(ahead)
    if kind == "history":
        from symbiote.storage.chroma.client import embedded_client
        from symbiote.storage.chroma.history_store import open_history_store

        return open_history_store(embedded_client(Path(path)), model, dimension)
    raise ValueError(f"unknown store kind {kind!r}")


def _idle_work(conn: Connection, idle: list[_Served], loaded: set[int]) -> None:
    """Steps of the open objects' idle work until a request arrives or none is left for now (a
    request can give an object more). An object's first work (reading its vectors into memory,
    which makes every later call quicker) goes in any gap between requests; once it is done
    (`loaded`), its work waits until no request came for IDLE_AFTER_SECONDS: a client storing or
    searching in a loop sends its next request within milliseconds, and a step started just
    before it would make it wait. A step that fails ends that object's idle work for good
    (logged): its reads keep the way they had before it."""
    for obj in list(idle):
        if id(obj) in loaded and conn.poll(IDLE_AFTER_SECONDS):
            return
        more = True
        while more and not conn.poll(0):
            try:
                more = obj.idle_step()
            except Exception:
                log.exception("the memory store's work between requests failed; it is not retried")
                idle.remove(obj)
                more = False
        if not more:
            loaded.add(id(obj))


def _settle_for(objects: dict[int, _Served], request: tuple[Any, ...]) -> None:
    """Before serving `request`: the writes behind of every object it might read, i.e. all but
    those of the object a deferrable call goes to. A failure is the object's to keep (logged
    here); the loop goes on serving."""
    to = request[1] if request[0] == "call" and request[1] in objects else None
    for handle, obj in objects.items():
        if handle == to and obj.defers(str(request[2])):
            continue
        try:
            obj.settle()
        except Exception:
            log.exception("the store's writes behind their answers failed")


def _die_with_parent() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: only if end-of-file cannot reach us (a hung call)
    except (OSError, AttributeError):
        pass  # not Linux (no libc.so.6 or prctl): end-of-file on the socket still ends the child


def child_main(fd: int, first_work_waits: bool = False) -> None:
    """The child's loop: open objects, call their methods, answer each request in order.
    `first_work_waits`: no idle work until the first call (`StoreProcess`)."""
    # Ctrl+C (SIGINT to the process group) and a SIGTERM to every process of the service (systemd,
    # a container runtime) are the server's to handle: it finishes its requests, then closes us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent()
    conn = Connection(fd)
    from symbiote.storage.chroma.embedded import preload

    preload()  # now, while the server is still importing its own modules

    objects: dict[int, _Served] = {}
    idle: list[_Served] = []  # objects whose work between requests is not done (`idle_step`)
    loaded: set[int] = set()  # ids of those whose first work is done (`_idle_work`)
    called = not first_work_waits
    while True:
        if called:
            _idle_work(conn, idle, loaded)
        try:
            request = _receive(conn)
        except (EOFError, OSError):
            break
        except pickle.UnpicklingError as exc:  # answered like any failure: the child keeps serving
            conn.send(("error", RemoteStoreError(f"the store refused a request: {exc}")))
            continue
        op = request[0]
        if op == "close":
            break
        called = called or op == "call"
        _settle_for(objects, request)
        try:
            if op == "open":
                handle, kind, path, model, dimension = request[1:]
                obj = _open(kind, path, model, dimension)
                objects[handle] = obj
                idle.append(obj)
                reply: tuple[str, Any] = ("ok", None)
            elif op == "ping":  # answered once Chroma's core is imported: the child is ready for work
                reply = ("ok", None)
            elif op == "ahead":
                from symbiote.storage.chroma.opening import make_ahead

                _AHEAD[(request[1], request[2])] = make_ahead(request[1], request[2])
                reply = ("ok", None)
            elif op == "forget":
                gone = objects.pop(request[1], None)
                if gone in idle:
                    idle.remove(gone)
                loaded.discard(id(gone))
                if gone is not None:
                    gone.close()
                reply = ("ok", None)
            else:  # "call": a method of the store's interface, by the name `remote` sent
                handle, method, args, kwargs = request[1:]
                if method not in _METHODS:
                    raise RemoteStoreError(f"{method!r} is no method of the store's interfaces")
                reply = ("ok", getattr(objects[handle], method)(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller; the child keeps serving
            reply = ("error", _portable(exc))
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send(("error", RemoteStoreError(f"the store's answer could not be sent back: {exc}")))
        except (EOFError, OSError):
            break
    for obj in objects.values():
        obj.close()
    from symbiote.storage.chroma.opening import discard_ahead

    for ahead in _AHEAD.values():
        discard_ahead(ahead)
