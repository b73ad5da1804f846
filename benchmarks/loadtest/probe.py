"""The event-loop lag probe: GET /__lag_probe in its own process, so the load generator's own loop
does not skew it (load.py runs itself with the hidden --probe option for that process).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ENTRY = Path(__file__).resolve().parent.parent / "load.py"


def probe_main(url: str, interval: float) -> None:
    """Hidden mode: GET /__lag_probe and /health alternately until stdin closes; print latencies."""
    parsed = httpx.URL(url)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    out: dict[str, list[float]] = {"lag_probe": [], "health": []}
    errors = 0
    conn: http.client.HTTPConnection | None = None
    turn = 0
    deadline = time.monotonic() + 4 * 3600  # bounded even if nobody closes stdin
    while not stop.is_set() and time.monotonic() < deadline:
        path, key = ("/health", "health") if turn % 5 == 4 else ("/__lag_probe", "lag_probe")
        turn += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection(parsed.host, parsed.port, timeout=30)
            started = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            out[key].append(time.perf_counter() - started)
        except (OSError, http.client.HTTPException):
            errors += 1
            conn = None
        stop.wait(interval)
    print(json.dumps({**out, "errors": errors}))


class LagProbe:
    def __init__(self, url: str, interval: float = 0.02) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ENTRY), "--probe", url, "--probe-interval", str(interval)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def finish(self) -> dict[str, Any]:
        out, _ = self.proc.communicate(b"", timeout=60)
        return json.loads(out)
