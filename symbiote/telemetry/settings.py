"""The telemetry settings, read and checked with the rest of `Settings` (`symbiote.config`).

A wrong LOG_FORMAT or OTLP protocol then fails the start in the same message as every other
problem. The exporters themselves read the standard OTEL_* variables; only what this module
names is Symbiote's own. Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symbiote.platform_hosts import is_loopback, platform_hosts

LOG_FORMATS = ("text", "json")
DEFAULT_LOG_FORMAT = "text"  # off Azure, and whatever an unknown LOG_FORMAT falls back to (after it is reported)
OTLP_PROTOCOLS = ("http/protobuf", "grpc")
PROTOCOL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
)
ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")


def on_azure(env: Mapping[str, str]) -> bool:
    """Whether the platform gave us a public name (App Service, Functions or Container Apps set one):
    there, logs are read by a log service rather than a person, so JSON is the better default."""
    return any(not is_loopback(name) for name in platform_hosts(env))


def log_format(env: Mapping[str, str]) -> str:
    """LOG_FORMAT (`text` or `json`); unset or `auto`: json on Azure, text elsewhere. An unknown value
    gives text here; `read_telemetry_settings` reports it."""
    raw = env.get("LOG_FORMAT", "").strip().lower()
    if raw in ("", "auto"):
        return "json" if on_azure(env) else DEFAULT_LOG_FORMAT
    if raw == "plain":
        return "text"
    return raw if raw in LOG_FORMATS else DEFAULT_LOG_FORMAT


def read_telemetry_settings(env: Mapping[str, str], problems: list[str]) -> dict[str, Any]:
    """`log_format` and `trace_content` for `Settings`; every wrong value appended to `problems`."""
    raw_format = env.get("LOG_FORMAT", "").strip().lower()
    if raw_format not in ("", "auto", "plain", *LOG_FORMATS):
        problems.append(f"LOG_FORMAT={raw_format!r} must be text or json (unset: json on Azure, text elsewhere)")
    raw_content = env.get("SYMBIOTE_TRACE_CONTENT", "").strip().lower()
    if raw_content and raw_content not in ON_WORDS + OFF_WORDS:
        problems.append(f"SYMBIOTE_TRACE_CONTENT={raw_content!r} must be on or off")
    for name in PROTOCOL_VARIABLES:
        protocol = env.get(name, "").strip().lower()
        if protocol and protocol not in OTLP_PROTOCOLS:
            problems.append(f"{name}={protocol!r} must be one of {', '.join(OTLP_PROTOCOLS)}")
    return {"log_format": log_format(env), "trace_content": raw_content in ON_WORDS}
