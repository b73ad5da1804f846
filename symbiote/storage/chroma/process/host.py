"""The store process: the embedded Chroma store in a child process of its own, reached through `Remote`.

Why a process: Chroma 1.5.9's Python bindings hold the GIL for the whole of every call, so the
event loop stalls for as long as an add takes. In the server process that stalls every other client's request, and a search waits
behind a batch's writes. In a child process those calls hold the child's GIL, and the server's
event loop, HTTP handling and embedding go on. The child also imports Chroma's core
on the other core while the server imports the MCP SDK, so the first search comes sooner.

The child hosts the same objects as before (`storage.open_embedded_store`, the history store);
`Remote` (below) sends method calls to them over a socket pair
(the method's name, pickled arguments and results).
One call at a time, like Chroma itself (the child's loop: `symbiote.storage.chroma.process.child`;
between calls it reads the store's vectors into memory, `symbiote.storage.chroma.vectors`). If the child dies (killed, crashed), the next call
starts a new one and reopens what was open: the server keeps serving.
The child exits when the server closes it, and by itself when the server goes away (the socket
reaches end-of-file; on Linux the kernel also kills it when its parent dies). It ignores SIGINT
and SIGTERM: those are for the server, which shuts down gracefully and then closes the child.
"""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Concatenate

from symbiote.errors import StoreUnavailableError, SymbioteError
from symbiote.storage.base import HistoryStore, MemoryStore, P, Reach, S, T
from symbiote.workers import import_numpy, usable_cores

log = logging.getLogger(__name__)

CHILD_ENV = "SYMBIOTE_STORE_CHILD_PATH"  # the server's sys.path, so the child imports the same code
CLOSE_TIMEOUT_SECONDS = 15.0


class _FairLock:
    """A lock handed out in arrival order: the one write in flight is not overtaken again and
    again by reads that release and re-take a plain lock."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0
        self._serving = 0

    def __enter__(self) -> None:
        with self._cond:
            ticket = self._next
            self._next += 1
            while ticket != self._serving:
                self._cond.wait()

    def __exit__(self, *_exc: object) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()


class _ThreadSafeImports(pickle.Unpickler):
    """Reads the child's answer. An answer may be the first thing in this process to need numpy (a
    vector) and is read in whichever thread asked; a first import of numpy racing another thread's
    (the model loading) fails with "partially initialized module", so a class that is neither
    Python's nor Symbiote's is looked up after numpy is imported, once, behind its lock."""

    def find_class(self, module: str, name: str, /) -> Any:
        if module != "builtins" and module.split(".")[0] != "symbiote":
            import_numpy()
        return super().find_class(module, name)


class _ChildGone(SymbioteError):
    """The child process is not there to answer (it exited, was killed or crashed)."""


class StoreProcess:
    """The child process that owns the embedded Chroma at `path`, started at once.

    `first_work_waits`: the child leaves its idle work (reading the vectors in) until the server's
    first call. So it does by default where this process has less than two cores (Azure's half a
    vCPU, a quota of one): there the two processes share one core's time, and a wake's reading of
    10,000 vectors came before its first answer. With a second core it reads them on that core at once."""

    def __init__(self, path: Path, first_work_waits: bool | None = None) -> None:
        self.path = path
        self._first_work_waits = usable_cores() < 2 if first_work_waits is None else first_work_waits
        self._lock = _FairLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._opened: dict[int, tuple[str, str, int]] = {}  # handle -> how it was opened, to reopen
        self._next_handle = 1
        self._closed = False
        self._preopened: dict[tuple[str, str, int], Future[int]] = {}
        self.calls: Counter[str] = Counter()  # the calls asked of the child, by method: a request's trips
        self._start()

    def preopen(self, kind: str, model: str, dimension: int) -> None:
        """Open a store now, in a thread, so that it is open by the time the server asks for it:
        the child opens it right after importing Chroma instead of idling until the app is built."""
        future: Future[int] = Future()
        self._preopened[(kind, model, dimension)] = future

        def run() -> None:
            try:
                future.set_result(self._open_now(kind, model, dimension))
            except BaseException as exc:  # noqa: BLE001 - `open` opens again and reports it
                future.set_exception(exc)

        threading.Thread(target=run, name=f"symbiote-preopen-{kind}", daemon=True).start()

    def make_ahead(self, model: str, dimension: int) -> None:
        """Have the child make a new, empty store now, in a thread, to be copied in by the first
        memory operation (`symbiote.storage.chroma.opening.make_ahead`): the data directory has none yet."""

        def run() -> None:
            try:
                self._request(("ahead", model, dimension))
            except Exception as exc:  # noqa: BLE001 - the first operation then creates the store itself
                log.info("making a new store ahead failed (%s); the warm-up creates it in place", exc)

        threading.Thread(target=run, name="symbiote-store-ahead", daemon=True).start()

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        code = (
            f"import json, os, sys; sys.path[:0] = json.loads(os.environ.pop({CHILD_ENV!r})); "
            "from symbiote.storage.chroma.process.child import child_main; "
            f"child_main({theirs.fileno():d}, first_work_waits={self._first_work_waits!r})"
        )
        env = {**os.environ, CHILD_ENV: json.dumps([p for p in sys.path if p])}
        # One BLAS thread: the vectors held in memory are searched with numpy, whose BLAS threads
        # would spin on the core the server's model needs for the same search.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            output: Any = sys.stderr.fileno()  # never stdout: it is the MCP channel under stdio
        except (AttributeError, OSError, ValueError):
            output = subprocess.DEVNULL
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code],
                pass_fds=(theirs.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
            )
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        weakref.finalize(self, _reap, self._proc, self._conn)  # forgotten without close(): no orphan
        log.debug("memory store process started (pid %d)", self._proc.pid)

    def _exchange(self, request: tuple[Any, ...]) -> Any:
        assert self._conn is not None
        try:
            self._conn.send(request)
            status, value = _ThreadSafeImports(io.BytesIO(self._conn.recv_bytes())).load()
        except (EOFError, OSError) as exc:
            raise _ChildGone(exc) from exc
        if status == "error":
            raise value  # raised by the store in the child
        return value

    def _revive(self) -> None:
        """A new child after the old one died, with everything reopened under the same handles."""
        code = self._proc.poll() if self._proc is not None else None
        log.error("memory store process ended unexpectedly (exit code %s); starting a new one", code)
        self._discard()
        self._start()
        for handle, (kind, model, dimension) in self._opened.items():
            self._exchange(("open", handle, kind, str(self.path), model, dimension))

    def _request(self, request: tuple[Any, ...]) -> Any:
        with self._lock:
            if self._closed:
                raise StoreUnavailableError("The memory store is closed (the server is shutting down).")
            if request[0] == "call":
                self.calls[request[2]] += 1
            try:
                if self._conn is None or (self._proc is not None and self._proc.poll() is not None):
                    self._revive()
                return self._exchange(request)
            except _ChildGone as gone:
                # Not retried: a write in flight may or may not have landed, so the caller decides.
                # The next call starts a new child.
                self._discard()
                raise StoreUnavailableError(
                    f"The memory store process stopped during this call ({gone.__cause__}); it is being restarted. "
                    "Try again: everything acknowledged before is stored."
                ) from gone

    def _open_handle(self, kind: str, model: str, dimension: int) -> int:
        future = self._preopened.pop((kind, model, dimension), None)
        if future is not None:
            try:
                return future.result()
            except Exception:  # opened again below, which raises with the reason
                log.debug("the early open of the %s store failed; opening it again", kind, exc_info=True)
        return self._open_now(kind, model, dimension)

    def memories(self, model: str, dimension: int) -> Remote[MemoryStore]:
        """The memory store, opened in the child."""
        return Remote(self, self._open_handle("memories", model, dimension))

    def history(self, model: str, dimension: int) -> Remote[HistoryStore]:
        """The conversation history's store, opened in the child."""
        return Remote(self, self._open_handle("history", model, dimension))

    def _open_now(self, kind: str, model: str, dimension: int) -> int:
        with self._lock:
            handle = self._next_handle
            self._next_handle += 1
        self._request(("open", handle, kind, str(self.path), model, dimension))
        with self._lock:
            self._opened[handle] = (kind, model, dimension)
        return handle

    def ping(self) -> None:
        """Return once the child has imported Chroma (or started again): ready for its first call."""
        self._request(("ping",))

    def call(self, handle: int, method: str, args: tuple[object, ...], kwargs: Mapping[str, object]) -> Any:
        """Call the method `method` of the store `handle` in the child (`Remote.call` types each call)."""
        return self._request(("call", handle, method, args, dict(kwargs)))

    def forget(self, handle: int) -> None:
        with self._lock:
            self._opened.pop(handle, None)
        try:
            self._request(("forget", handle))
        except StoreUnavailableError:
            pass

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Close the stores and end the child (it finishes the call in progress first)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._conn is not None:
                    self._conn.send(("close",))
                if self._proc is not None:
                    self._proc.wait(timeout=CLOSE_TIMEOUT_SECONDS)
            except (OSError, subprocess.TimeoutExpired) as exc:
                log.warning("memory store process did not close cleanly (%s); stopping it", exc)
            self._discard()


def _reap(proc: subprocess.Popen[bytes], conn: Connection) -> None:
    conn.close()  # end-of-file: the child closes its stores and exits
    try:
        proc.wait(timeout=CLOSE_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


_PRESTARTED: dict[Path, StoreProcess] = {}


def prestart(path: Path, preopen: tuple[str, str, int] | None = None, ahead: tuple[str, int] | None = None) -> None:
    """Start the child for `path` now (at process start), so that it imports Chroma while the
    server imports everything else; `for_path` hands it to the runtime. `preopen` (kind, model,
    dimension) opens that store as soon as Chroma is imported; `ahead` (model, dimension) makes a
    new one ahead instead, where there is none yet."""
    key = path.expanduser().resolve()
    if key not in _PRESTARTED:
        _PRESTARTED[key] = StoreProcess(path)
        if preopen is not None:
            _PRESTARTED[key].preopen(*preopen)
        elif ahead is not None:
            _PRESTARTED[key].make_ahead(*ahead)


def for_path(path: Path) -> StoreProcess:
    """The prestarted child for `path`, or a new one."""
    return _PRESTARTED.pop(path.expanduser().resolve(), None) or StoreProcess(path)


class Remote(Reach[S]):
    """The reach of a store in the store process (the child), by its handle."""

    def __init__(self, host: StoreProcess, handle: int) -> None:
        self._host = host
        self._handle = handle

    def call(self, op: Callable[Concatenate[S, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = self._host.call(self._handle, op.__name__, args, kwargs)
        return result

    def close(self) -> None:
        """Close this store's Chroma client in the child (e.g. to reopen it after a new writer took over)."""
        self._host.forget(self._handle)
