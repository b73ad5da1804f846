"""The event-loop lag probe, run as a script by server.LagProbe: `probe.py URL` until its stdin closes.

Every 20 ms over one keep-alive connection it sends GET /__lag_probe (no route serves it, so the
router's 404 touches neither the store nor a worker thread: its latency is the event loop's), and
every fifth time GET /health (which counts memories on a store thread, so it shows queueing too).
Prints the latencies in seconds as JSON.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from urllib.parse import urlsplit


def main(url: str, interval: float = 0.02) -> None:
    target = urlsplit(url)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    out: dict[str, list[float]] = {"lag_probe": [], "health": []}
    errors, turn, conn = 0, 0, None
    deadline = time.monotonic() + 4 * 3600  # bounded even if nobody closes stdin
    while not stop.is_set() and time.monotonic() < deadline:
        path, key = ("/health", "health") if turn % 5 == 4 else ("/__lag_probe", "lag_probe")
        turn += 1
        try:
            conn = conn or http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=30)
            started = time.perf_counter()
            conn.request("GET", path)
            conn.getresponse().read()
            out[key].append(time.perf_counter() - started)
        except (OSError, http.client.HTTPException):
            errors += 1
            conn = None
        stop.wait(interval)
    print(json.dumps({**out, "errors": errors}))


if __name__ == "__main__":
    main(sys.argv[1])
