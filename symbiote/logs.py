"""Logging to stderr (stdout belongs to the stdio transport), one format everywhere."""

from __future__ import annotations

import logging
import sys


def configure(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "chromadb.telemetry", "onnxruntime"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
