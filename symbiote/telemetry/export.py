"""Where traces and metrics go: Application Insights, an OTLP endpoint, both, or nowhere.

- `APPLICATIONINSIGHTS_CONNECTION_STRING` set: the Azure Monitor distro (`configure_azure_monitor`),
  with the managed identity when `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` says so (the exporter
  reads it). Its library instrumentations, live metrics and performance counters stay off: each
  would cost ingestion for nothing this server needs. It also sends the `symbiote` logger's lines,
  so the start line below reaches the portal.
- `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`) set: the OTLP
  exporters, over `OTEL_EXPORTER_OTLP_PROTOCOL` (http/protobuf, the default, or grpc). They and
  the SDK read every other standard variable themselves (headers, timeouts, `OTEL_TRACES_SAMPLER`,
  `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`...).
- Neither: nothing is configured and the SDK is never imported. Spans and instruments made through
  the OpenTelemetry API stay no-ops, and the MCP middleware skips even those (`active()`).

`OTEL_SDK_DISABLED=true` turns everything off; `OTEL_TRACES_EXPORTER=none` or
`OTEL_METRICS_EXPORTER=none` one signal.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from symbiote import __version__
from symbiote.telemetry import redaction
from symbiote.telemetry.settings import ON_WORDS

log = logging.getLogger("symbiote")

SERVICE_NAME = "symbiote"
# The distro's library instrumentations (azure-monitor-opentelemetry 1.8): all off. Azure SDK spans
# would trace every lease renewal on the file share; the web frameworks are not ours.
DISTRO_INSTRUMENTATIONS = (
    "azure_sdk",
    "django",
    "fastapi",
    "flask",
    "httpx",
    "httpx2",
    "psycopg2",
    "requests",
    "urllib",
    "urllib3",
)


@dataclass(frozen=True)
class Plan:
    """What the environment asks for: Application Insights, and the OTLP protocol per signal (None: not sent)."""

    azure: bool = False
    otlp_traces: str | None = None
    otlp_metrics: str | None = None

    @property
    def exporting(self) -> bool:
        return self.azure or self.otlp_traces is not None or self.otlp_metrics is not None

    def describe(self) -> str:
        parts = ["Application Insights"] if self.azure else []
        if self.otlp_traces:
            parts.append(f"OTLP traces ({self.otlp_traces})")
        if self.otlp_metrics:
            parts.append(f"OTLP metrics ({self.otlp_metrics})")
        return ", ".join(parts) or "off"


def plan(env: Mapping[str, str]) -> Plan:
    """Read what to export from the standard variables (see the module's docstring)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in ON_WORDS:
        return Plan()
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()

    def signal(name: str) -> str | None:
        if env.get(f"OTEL_{name}_EXPORTER", "").strip().lower() == "none":
            return None
        if not (endpoint or env.get(f"OTEL_EXPORTER_OTLP_{name}_ENDPOINT", "").strip()):
            return None
        protocol = env.get(f"OTEL_EXPORTER_OTLP_{name}_PROTOCOL", "") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
        return protocol.strip().lower() or "http/protobuf"

    azure = bool(env.get("APPLICATIONINSIGHTS_CONNECTION_STRING", "").strip())
    return Plan(azure=azure, otlp_traces=signal("TRACES"), otlp_metrics=signal("METRICS"))


_lock = threading.Lock()
_started: Plan | None = None


def start(env: Mapping[str, str] | None = None) -> Plan:
    """Configure the exporters the environment asks for, once per process, then log "symbiote started".

    Called when the runtime is built (every transport, and the Functions app). The start line is
    logged after the exporters exist so that Application Insights receives it: the portal counts
    cold starts by it.
    """
    global _started
    with _lock:
        first = _started is None
        if _started is None:
            env = os.environ if env is None else env
            chosen = plan(env)
            _started = _configure(chosen, env) if chosen.exporting else chosen
        started = _started
    if first:
        redaction.protect()  # the root logger's handlers, whoever set them up (the Functions worker does)
        log.info("symbiote started: version %s, pid %d, telemetry: %s", __version__, os.getpid(), started.describe())
    return started


def active() -> bool:
    """Whether spans and metrics go anywhere. False until `start`, and always without an exporter."""
    return _started is not None and _started.exporting


def _configure(chosen: Plan, env: Mapping[str, str]) -> Plan:
    """Set the global providers; a missing package is reported and that destination left out."""
    if chosen.azure:
        try:
            _start_azure(chosen, env)
            return chosen
        except ImportError as exc:
            log.error(
                "APPLICATIONINSIGHTS_CONNECTION_STRING is set but the Azure Monitor distro is missing (%s): "
                "pip install -r requirements-azure.txt. Telemetry goes to OTLP only, if configured.",
                exc,
            )
            chosen = Plan(otlp_traces=chosen.otlp_traces, otlp_metrics=chosen.otlp_metrics)
    if not chosen.exporting:
        return chosen
    try:
        _start_otlp(chosen, env)
    except ImportError as exc:
        log.error(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK or exporter is missing (%s): "
            "pip install -r requirements.txt. Nothing is exported.",
            exc,
        )
        return Plan()
    return chosen


def _resource(env: Mapping[str, str]) -> Any:
    """service.name `symbiote` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it, the version,
    and the host name as the instance (a replica's name on Container Apps: one row per cold start)."""
    from opentelemetry.sdk.resources import Resource

    given = env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    attributes: dict[str, str] = {"service.version": __version__}
    if not env.get("OTEL_SERVICE_NAME", "").strip() and "service.name=" not in given:
        attributes["service.name"] = SERVICE_NAME
    if "service.instance.id=" not in given:
        attributes["service.instance.id"] = socket.gethostname()
    return Resource.create(attributes)


def _span_processor(protocol: str) -> Any:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
    return BatchSpanProcessor(OTLPSpanExporter())


def _metric_reader(protocol: str) -> Any:
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter  # type: ignore[assignment]
    return PeriodicExportingMetricReader(OTLPMetricExporter())


def _start_otlp(chosen: Plan, env: Mapping[str, str]) -> None:
    from opentelemetry import metrics, trace

    resource = _resource(env)
    if chosen.otlp_traces:
        from opentelemetry.sdk.trace import TracerProvider

        provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER
        provider.add_span_processor(_span_processor(chosen.otlp_traces))
        trace.set_tracer_provider(provider)
    if chosen.otlp_metrics:
        from opentelemetry.sdk.metrics import MeterProvider

        metrics.set_meter_provider(
            MeterProvider(resource=resource, metric_readers=[_metric_reader(chosen.otlp_metrics)])
        )


def _start_azure(chosen: Plan, env: Mapping[str, str]) -> None:
    """The distro, with any OTLP destination added to the same providers."""
    from azure.monitor.opentelemetry import configure_azure_monitor

    configure_azure_monitor(
        resource=_resource(env),
        logger_name="symbiote",
        instrumentation_options={name: {"enabled": False} for name in DISTRO_INSTRUMENTATIONS},
        enable_live_metrics=False,
        enable_performance_counters=False,
        span_processors=[_span_processor(chosen.otlp_traces)] if chosen.otlp_traces else [],
        metric_readers=[_metric_reader(chosen.otlp_metrics)] if chosen.otlp_metrics else [],
    )
    redaction.protect(logging.getLogger("symbiote"))  # the distro's handler sends our lines: redact them too
