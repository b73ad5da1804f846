"""Telemetry: traces and metrics after the OpenTelemetry conventions for MCP, and logs an operator can search.

- `symbiote.telemetry.settings`: LOG_FORMAT, SYMBIOTE_TRACE_CONTENT, the OTLP protocol check (read by
  `symbiote.config`, so what this door imports never brings OpenTelemetry).
- `symbiote.telemetry.export`: where traces and metrics go (Application Insights, an OTLP endpoint, or
  nowhere, in which case the SDK is never imported).
- `symbiote.telemetry.mcp_spans`: one server span per MCP request and the duration histogram.
- `symbiote.telemetry.gauges`: the memory count and the store's size.
- `symbiote.telemetry.stages`: a span per stage of a request (the embedding, each trip to the store).
- `symbiote.telemetry.json_logs` and `symbiote.telemetry.redaction`: JSON log lines with the trace ids,
  and the filter that keeps secrets and memory text out of every log line.

See docs/observability.md.

This is the package's door: other packages import from `symbiote.telemetry`, never from a module
inside it (tests/test_layers.py checks). Only the settings are imported here (`symbiote.config` reads
them on every start, `symbiote --help` included); the other modules are let out whole and imported
where used: `json_logs` and `redaction` by the logging set-up, `export`, `gauges`, `mcp_spans` and
`stages`, which bring OpenTelemetry, by the server.
"""

from symbiote.telemetry.settings import (
    DEFAULT_LOG_FORMAT,
    OFF_WORDS,
    ON_WORDS,
    log_format,
    read_telemetry_settings,
)

__all__ = [
    "DEFAULT_LOG_FORMAT",
    "OFF_WORDS",
    "ON_WORDS",
    "export",
    "gauges",
    "json_logs",
    "log_format",
    "mcp_spans",
    "read_telemetry_settings",
    "redaction",
    "stages",
]
