"""One JSON object per log line, for a log service to index (LOG_FORMAT=json, the default on Azure).

Keys: `timestamp` (UTC, ISO 8601, milliseconds), `level`, `logger`, `message`, `trace_id` and
`span_id` (hex, of the span current when the line was logged, null outside one), and
`exception` when there is a traceback. With the trace id an operator goes from a log line to
the request's trace and back. OpenTelemetry is looked up only if something already imported
it: formatting a line never imports it.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime


def current_ids() -> tuple[str | None, str | None]:
    """The current span's trace and span ids in hex, or (None, None) outside a recorded span."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None, None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON; newlines in the message or traceback stay inside the string."""

    def format(self, record: logging.LogRecord) -> str:
        trace_id, span_id = current_ids()
        entry: dict[str, object] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": trace_id,
            "span_id": span_id,
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
