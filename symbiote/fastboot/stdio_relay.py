"""`symbiote stdio`'s wire: the process's stdin and stdout, owned from the first instant.

Claude Desktop writes `initialize` the moment it starts the server and gives up if the answer
is slow, while importing the MCP SDK takes most of a second. `StdioRelay` takes the real stdin
and stdout about 10 ms after start, before the SDK or the server is imported, and reads the
client's lines in a thread of its own.
Lines the stdio handshake cache (`symbiote.fastboot.stdio_handshake`) may answer are answered at once;
every line the SDK must see is passed to it, unchanged and in order, through a pipe that the
SDK's own `stdio_server` reads exactly as it would read stdin. The SDK's output comes back
through a second pipe and goes out on the real stdout, except its reply to an `initialize` the
cache has already answered.

As the SDK itself does, file descriptor 0 then reads the null device and 1 writes to stderr,
so a stray print or a child process can never corrupt the protocol stream. The ending is the
SDK's too: end of input ends the session once every answer is written (however late the client
reads them), and a client that closes our stdout ends it with exit status 1.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from symbiote.fastboot.stdio_handshake import FORWARD, StdioHandshakeCache

log = logging.getLogger(__name__)


class StdioRelay:
    """The client's stdin/stdout on one side, the SDK's stdio transport on the other."""

    def __init__(self, cache: StdioHandshakeCache | None, on_mismatch: Callable[[], object] | None = None) -> None:
        """Claims fds 0 and 1 at once (see the module docstring); `start` begins relaying.
        `on_mismatch` is called if the SDK's reply to a cached `initialize` differed from the
        cache's (it cannot, for the same fingerprint; if it ever does, the cache must go)."""
        self._on_mismatch = on_mismatch
        self._wire_in = os.dup(0)
        self._wire_out = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self._to_sdk_read, self._to_sdk_write = os.pipe()
        self._to_sdk_lock = threading.Lock()  # the reader thread writes it; `finish` may close it
        self._to_sdk_open = True
        self._from_sdk_read, self._from_sdk_write = os.pipe()
        self._opening = cache.session() if cache is not None else None
        self._suppressed: dict[int | str, bytes] = {}  # request id -> the cached reply already sent
        self._suppressed_lock = threading.Lock()
        self._out_lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._from_client, name="symbiote-stdio-in", daemon=True),
            threading.Thread(target=self._from_sdk, name="symbiote-stdio-out", daemon=True),
        ]
        self._sdk_stdin: io.TextIOWrapper | None = None
        self._sdk_stdout: io.TextIOWrapper | None = None
        self.client_gone = False  # the client closed our stdout: the session ends, and the exit is 1

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def sdk_files(self) -> tuple[Any, Any]:
        """(stdin, stdout) for `mcp.server.stdio.stdio_server`, wrapped as it wraps the real ones."""
        import anyio

        self._sdk_stdin = io.TextIOWrapper(os.fdopen(self._to_sdk_read, "rb"), encoding="utf-8", errors="replace")
        self._sdk_stdout = io.TextIOWrapper(os.fdopen(self._from_sdk_write, "wb"), encoding="utf-8")
        return anyio.wrap_file(self._sdk_stdin), anyio.wrap_file(self._sdk_stdout)

    def finish(self) -> None:
        """After the SDK has finished: let its last lines out (waiting as long as the client takes
        to read them, as the SDK would), end its input, and give fds 0 and 1 back."""
        if self._sdk_stdout is not None:
            try:
                self._sdk_stdout.close()
            except OSError:  # the client closed our stdout: nothing more can reach it
                pass
        else:
            os.close(self._from_sdk_write)
        self._threads[1].join()
        # The SDK's reader may still wait for a line (a Ctrl+C while serving): end its input. If
        # the client thread holds the pipe, it is stuck writing to it, and nobody reads it any
        # more: closing the reading end releases it.
        if self._to_sdk_lock.acquire(timeout=1.0):
            self._to_sdk_lock.release()
            self._end_sdk_input()
        elif self._sdk_stdin is not None:
            with contextlib.suppress(OSError):
                self._sdk_stdin.close()
        for fd, wire in ((0, self._wire_in), (1, self._wire_out)):
            try:
                os.dup2(wire, fd)
            except OSError:
                pass

    def end_input(self) -> bool:
        """End the SDK's input now, as if the client had closed stdin (Ctrl+C). False if the
        client thread is in the middle of passing a line on: the caller then interrupts instead."""
        if not self._to_sdk_lock.acquire(blocking=False):
            return False
        self._to_sdk_lock.release()
        self._end_sdk_input()
        return True

    def _end_sdk_input(self) -> None:
        with self._to_sdk_lock:
            if self._to_sdk_open:
                self._to_sdk_open = False
                os.close(self._to_sdk_write)

    def _from_client(self) -> None:
        """Each line from the client: answered from the cache, passed to the SDK, or both."""
        reader = os.fdopen(self._wire_in, "rb", closefd=False)
        try:
            for line in iter(reader.readline, b""):
                answer = self._opening.answer(line) if self._opening is not None else FORWARD
                if answer.suppress_id is not None and answer.reply is not None:
                    with self._suppressed_lock:
                        self._suppressed[answer.suppress_id] = answer.reply
                if answer.reply is not None:
                    try:
                        self._to_client(answer.reply)
                    except OSError:  # the client closed our stdout: the SDK's next write says so
                        pass
                if answer.forward:
                    with self._to_sdk_lock:
                        if not self._to_sdk_open:
                            return
                        _write_all(self._to_sdk_write, line)
        except OSError as exc:  # the SDK's side closed: it has stopped
            log.debug("stdin relay stopped: %s", exc)
        finally:
            self._end_sdk_input()  # end of input for the SDK, as the client's was

    def _from_sdk(self) -> None:
        """Each line the SDK writes goes to the client, except replies the cache already gave."""
        reader = os.fdopen(self._from_sdk_read, "rb")
        with reader:  # closing it on a broken wire makes the SDK's next write fail, as it would have
            for line in iter(reader.readline, b""):
                if self._suppressed and self._answered_already(line):
                    continue
                try:
                    self._to_client(line)
                except OSError as exc:
                    # The SDK may have written every answer it had into the pipe already and wait for
                    # input: ending its input ends the session, as a failed write would have.
                    log.info("the client closed stdout (%s); ending the session", exc)
                    self.client_gone = True
                    self.end_input()
                    return

    def _answered_already(self, line: bytes) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or not ("result" in message or "error" in message):
            return False
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return False
        with self._suppressed_lock:
            sent = self._suppressed.pop(request_id, None)
        if sent is None:
            return False
        if json.loads(sent) != message:
            log.warning(
                "the cached answer to initialize differed from the SDK's; the cache is dropped; the next start records it again"
            )
            if self._on_mismatch is not None:
                self._on_mismatch()
        return True

    def _to_client(self, line: bytes) -> None:
        with self._out_lock:
            _write_all(self._wire_out, line)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
