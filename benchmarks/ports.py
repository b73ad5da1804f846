"""Starting a server to measure: a free port, and waiting until it listens.

Shared by the benchmark scripts (each runs as `python benchmarks/<name>.py`, which puts this
directory on sys.path).
"""

from __future__ import annotations

import asyncio
import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_listening(port: int, interval: float = 0.02) -> None:
    """Return once 127.0.0.1:`port` accepts a connection, retrying as a client's connector does.

    A bare TCP connect: building an HTTP client per attempt costs more CPU than the server's own
    start on this 2-core machine, and would be measured as the server's.
    """
    while True:
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(interval)
