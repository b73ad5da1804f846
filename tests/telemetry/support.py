"""Helpers for the telemetry tests: a real OTLP receiver on loopback, over HTTP and over gRPC. No tests here.

The receiver decodes what the server's exporters send with the OTLP protobuf definitions
(`opentelemetry-proto`) and keeps every span and metric data point, the way a collector would.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


@dataclass
class Span:
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status_code: int
    resource: dict[str, Any]
    events: list[Any] = field(default_factory=list)


@dataclass
class Point:
    metric: str
    kind: str  # histogram | gauge | sum
    attributes: dict[str, Any]
    value: float  # the gauge's or sum's value; a histogram's count


class Received:
    """Everything the receivers got, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans: list[Span] = []
        self.points: list[Point] = []
        self.requests: dict[str, int] = {}

    def add_traces(self, request: trace_service_pb2.ExportTraceServiceRequest, how: str) -> None:
        with self._lock:
            self.requests[how] = self.requests.get(how, 0) + 1
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        self.spans.append(
                            Span(
                                name=span.name,
                                kind=span.kind,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes=attributes(span.attributes),
                                status_code=span.status.code,
                                resource=resource,
                                events=list(span.events),
                            )
                        )

    def add_metrics(self, request: metrics_service_pb2.ExportMetricsServiceRequest, how: str) -> None:
        with self._lock:
            self.requests[how] = self.requests.get(how, 0) + 1
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            value = point.count if kind == "histogram" else value_of_number(point)
                            self.points.append(Point(metric.name, kind, attributes(point.attributes), value))

    def wait_for(self, check: Callable[[Received], bool], timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if check(self):
                    return True
            time.sleep(0.1)
        return False

    def named(self, name: str) -> list[Span]:
        return [span for span in self.spans if span.name == name]


def value_of_number(point: Any) -> float:
    return point.as_int if point.WhichOneof("value") == "as_int" else point.as_double


class HttpReceiver:
    """OTLP/HTTP (protobuf) at http://127.0.0.1:<port>/v1/traces and /v1/metrics."""

    def __init__(self, received: Received) -> None:
        self.received = received
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    outer.received.add_traces(trace_service_pb2.ExportTraceServiceRequest.FromString(body), "http")
                    reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    outer.received.add_metrics(metrics_service_pb2.ExportMetricsServiceRequest.FromString(body), "http")
                    reply = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HttpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class GrpcReceiver:
    """OTLP/gRPC at 127.0.0.1:<port> (the trace and metrics services)."""

    def __init__(self, received: Received) -> None:
        import grpc

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # the service's name
                received.add_traces(request, "grpc")
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                received.add_metrics(request, "grpc")
                return metrics_service_pb2.ExportMetricsServiceResponse()

        self.received = received
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"

    def __enter__(self) -> GrpcReceiver:
        self._server.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.stop(grace=None)


class AppInsightsReceiver:
    """Application Insights' ingestion API (`/v2.1/track`, JSON envelopes) on loopback: the Azure Monitor
    exporter is pointed at it by the connection string's IngestionEndpoint."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        lock = threading.Lock()
        items = self.items

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                envelopes = json.loads(body) if self.path.startswith("/v2.1/track") else []
                with lock:
                    items.extend(envelopes)
                reply = json.dumps({"itemsReceived": len(envelopes), "itemsAccepted": len(envelopes), "errors": []})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply.encode())

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        port = self._server.server_address[1]
        self.env = {
            "APPLICATIONINSIGHTS_CONNECTION_STRING": (
                f"InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:{port}/"
            ),
            # Nothing but the loopback receiver: no statsbeat, no control plane, no VM metadata probe.
            "APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL": "true",
            "APPLICATIONINSIGHTS_SDKSTATS_DISABLED": "true",
            "APPLICATIONINSIGHTS_CONTROLPLANE_DISABLED": "true",
            "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS": "azure_app_service",
            "OTEL_TRACES_SAMPLER": "always_on",  # the distro would keep 5 traces a second
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
            "OTEL_BLRP_SCHEDULE_DELAY": "200",
        }
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def of_kind(self, base_type: str) -> list[dict[str, Any]]:
        return [
            item["data"]["baseData"] for item in list(self.items) if item.get("data", {}).get("baseType") == base_type
        ]

    def __enter__(self) -> AppInsightsReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def export_env(endpoint: str, protocol: str = "http/protobuf", **extra: str) -> dict[str, str]:
    """The standard variables that point a server's exporters at a receiver, flushing quickly."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
        **extra,
    }


TRACEPARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACEPARENT_TRACE}-{TRACEPARENT_SPAN}-01"
