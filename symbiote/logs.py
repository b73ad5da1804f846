"""Logging to stderr (stdout belongs to the stdio transport), one format everywhere.

Plain text for a person at a terminal; JSON lines (`symbiote.telemetry.json_logs`) for a log
service, chosen by LOG_FORMAT (unset: JSON on Azure, text elsewhere). Either way every line
passes the redacting filter (`symbiote.telemetry.redaction`): no token, secret or memory text
is written, at any level, whichever library logged it.
"""

from __future__ import annotations

import logging
import os
import sys

from symbiote.telemetry import log_format
from symbiote.telemetry.redaction import RedactingFilter

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(level: str, fmt: str | None = None) -> None:
    """Root logging at `level`, as `fmt` (`text` or `json`; None: what LOG_FORMAT says)."""
    handler = logging.StreamHandler(sys.stderr)
    if (fmt or log_format(os.environ)) == "json":
        from symbiote.telemetry.json_logs import JsonFormatter

        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "chromadb.telemetry", "onnxruntime"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
