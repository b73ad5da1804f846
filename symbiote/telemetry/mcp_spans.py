"""One server span per MCP request, after the OpenTelemetry semantic conventions for MCP, and its duration.

The span is named `{mcp.method.name} {target}` (`tools/call search_memory`, `prompts/get
venom_identity`, `initialize`) and carries `mcp.method.name`, `mcp.protocol.version`,
`jsonrpc.request.id`, `network.transport`, and for a tool call `gen_ai.tool.name` and
`gen_ai.operation.name=execute_tool`; a tool that answers with `isError` sets
`error.type=tool_error`, a JSON-RPC error its code, an exception its type. A W3C trace context
in the request's `params._meta` (`traceparent`, `tracestate`) is the parent. The engine's spans
(embedding, keyword search, vector search, store calls) hang under it.

Its duration goes into the `mcp.server.operation.duration` histogram (seconds).

Neither arguments, results nor error messages go into attributes: they hold memories and
queries. `SYMBIOTE_TRACE_CONTENT=on` adds the tool's arguments and result
(`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) for an owner debugging their own server.

It runs as the MCP SDK's server middleware, which wraps every inbound message on every transport,
in place of the SDK's own OpenTelemetry middleware. Without an exporter (`export.active()` False)
it only calls the next handler.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from opentelemetry import metrics, trace
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, StatusCode

from symbiote import __version__
from symbiote.telemetry import export

DURATION_METRIC = "mcp.server.operation.duration"
# The bucket boundaries the conventions advise for this histogram, in seconds.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
CONTENT_LIMIT = 4096  # characters of arguments or result kept with SYMBIOTE_TRACE_CONTENT=on


def _target(method: str, params: Mapping[str, Any]) -> str | None:
    """The low-cardinality part of the span name: the tool's or prompt's name (never a resource URI)."""
    if method in ("tools/call", "prompts/get"):
        name = params.get("name")
        return name if isinstance(name, str) else None
    return None


def _attributes(ctx: Any, params: Mapping[str, Any], target: str | None) -> dict[str, Any]:
    method = ctx.method
    version = params.get("protocolVersion") if method == "initialize" else ctx.protocol_version
    attributes: dict[str, Any] = {
        "mcp.method.name": method,
        "network.transport": "pipe" if ctx.request is None else "tcp",
    }
    if isinstance(version, str) and version:
        attributes["mcp.protocol.version"] = version
    if ctx.request_id is not None:
        attributes["jsonrpc.request.id"] = str(ctx.request_id)
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
        if target is not None:
            attributes["gen_ai.tool.name"] = target
    elif method == "prompts/get" and target is not None:
        attributes["gen_ai.prompt.name"] = target
    elif method == "resources/read" and isinstance(params.get("uri"), str):
        attributes["mcp.resource.uri"] = params["uri"]  # our resources are fixed names, no content
    return attributes


def _is_tool_error(result: Any) -> bool:
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return isinstance(result, CallToolResult) and result.is_error is True


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:CONTENT_LIMIT]


class McpTelemetry:
    """The middleware: `(ctx, call_next) -> result`, as `mcp.server.context.ServerMiddleware`."""

    def __init__(self, *, content: bool = False, after_tool: Callable[[], None] | None = None) -> None:
        """`content`: SYMBIOTE_TRACE_CONTENT. `after_tool`: called after each tool call while exporting
        (the gauges refresh their figures from it, off the request's path)."""
        self._content = content
        self._after_tool = after_tool
        self._tracer = trace.get_tracer("symbiote.mcp", __version__)
        self._duration = metrics.get_meter("symbiote.mcp", __version__).create_histogram(
            DURATION_METRIC,
            unit="s",
            description="Duration of MCP requests as observed by the server, from receipt to the result.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        if not export.active():
            return await call_next(ctx)
        params = ctx.params or {}
        target = _target(ctx.method, params)
        attributes = _attributes(ctx, params, target)
        meta = params.get("_meta")
        parent = extract(meta) if isinstance(meta, Mapping) else None
        name = f"{ctx.method} {target}" if target else ctx.method
        started = time.perf_counter()
        error_type: str | None = None
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            if self._content and ctx.method == "tools/call":
                span.set_attribute("gen_ai.tool.call.arguments", _clip(params.get("arguments") or {}))
            try:
                result = await call_next(ctx)
            except MCPError as exc:
                error_type = str(exc.code)
                span.set_attribute("rpc.response.status_code", error_type)
                raise
            except Exception as exc:
                error_type = type(exc).__qualname__
                if self._content:
                    span.record_exception(exc)
                raise
            else:
                if ctx.method == "tools/call":
                    if _is_tool_error(result):
                        error_type = "tool_error"
                    if self._content and isinstance(result, Mapping):
                        span.set_attribute("gen_ai.tool.call.result", _clip(result.get("content")))
                return result
            finally:
                if error_type is not None:
                    span.set_attribute("error.type", error_type)
                    span.set_status(StatusCode.ERROR)
                self._record(ctx.method, attributes, error_type, time.perf_counter() - started)
                if ctx.method == "tools/call" and self._after_tool is not None:
                    self._after_tool()

    def _record(self, method: str, attributes: Mapping[str, Any], error_type: str | None, seconds: float) -> None:
        """The histogram's point: by method, tool or prompt, transport and error, never by request."""
        keys = ("mcp.method.name", "gen_ai.tool.name", "gen_ai.prompt.name", "network.transport")
        point = {key: attributes[key] for key in keys if key in attributes}
        if error_type is not None:
            point["error.type"] = error_type
        self._duration.record(seconds, point)


def instrument(chain: list[Any], middleware: McpTelemetry) -> None:
    """Put `middleware` in a server's middleware `chain` (`MCPServer.middleware`) where the SDK's own
    OpenTelemetry middleware is, outermost, in its place: two spans per request would be one too many."""
    for index, existing in enumerate(chain):
        if type(existing).__name__ == "OpenTelemetryMiddleware":
            chain[index] = middleware
            return
    chain.insert(0, middleware)
