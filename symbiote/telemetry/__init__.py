"""Telemetry: traces and metrics after the OpenTelemetry conventions for MCP, and logs an operator can search.

- `symbiote.telemetry.settings`: LOG_FORMAT, SYMBIOTE_TRACE_CONTENT, the OTLP protocol check (read by
  `symbiote.config`, so this package imports nothing on import).
- `symbiote.telemetry.export`: where traces and metrics go (Application Insights, an OTLP endpoint, or
  nowhere, in which case the SDK is never imported).
- `symbiote.telemetry.mcp_spans`: one server span per MCP request and the duration histogram.
- `symbiote.telemetry.gauges`: the memory count and the store's size.
- `symbiote.telemetry.stages`: a span per stage of a request (the embedding, each trip to the store).
- `symbiote.telemetry.json_logs` and `symbiote.telemetry.redaction`: JSON log lines with the trace ids,
  and the filter that keeps secrets and memory text out of every log line.

See docs/observability.md.
"""
