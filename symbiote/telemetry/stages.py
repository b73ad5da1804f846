"""A span for one stage of a request (the embedding, a trip to the store), under its request span.

Made only when the request's own span is being recorded (`symbiote.telemetry.mcp_spans`), so
without an exporter a stage costs nothing but this check: the OpenTelemetry API only. Exceptions
are not recorded on it: their messages may quote a memory (the request's span says that it failed).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace

_tracer = trace.get_tracer(__name__)


def stage(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """The span `name` under the current recorded span, or nothing at all."""
    if not trace.get_current_span().is_recording():
        return nullcontext()
    return _tracer.start_as_current_span(
        name, attributes=attributes or None, record_exception=False, set_status_on_exception=False
    )
