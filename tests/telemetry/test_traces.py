"""Traces and metrics reach a real OTLP receiver on loopback from a real `symbiote serve`.

One server span per MCP request after the OpenTelemetry conventions for MCP, with the engine's
spans under a search, the parent from `params._meta.traceparent`, `error.type=tool_error` on a
tool error, nothing of the memory or the query in any attribute; the duration histogram and the
memory gauges. Over OTLP/HTTP (protobuf) and over gRPC. Without an exporter, nothing is even
imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ServerProcess
from tests.telemetry.support import (
    TRACEPARENT,
    TRACEPARENT_SPAN,
    TRACEPARENT_TRACE,
    AppInsightsReceiver,
    GrpcReceiver,
    HttpReceiver,
    Received,
    Span,
    export_env,
)

SERVER = 2  # SpanKind.SERVER in OTLP's enumeration
ENGINE_SPANS = {"embedding", "candidate search"}


async def session(server: ServerProcess, marker: str) -> dict[str, str]:
    """Store, search (with a trace context in `_meta`), a tool error, the prompt: what a client does."""
    memory = f"Project {marker} ships its web app with React"
    query = f"Which frontend framework does project {marker} use?"
    async with Client(server.mcp_url) as client:
        stored = await client.call_tool("store_memory", {"content": memory, "tags": ["work"]})
        found = await client.call_tool("search_memory", {"query": query}, meta={"traceparent": TRACEPARENT})
        failed = await client.call_tool("search_memory", {"query": "   "})
        prompt = await client.get_prompt("venom_identity")
    assert not stored.is_error and not found.is_error and failed.is_error and prompt.messages
    return {"memory": memory, "query": query, "marker": marker}


def descendants(spans: list[Span], root: Span) -> list[Span]:
    found, frontier = [], [root.span_id]
    while frontier:
        parent = frontier.pop()
        for span in spans:
            if span.parent_id == parent and span.trace_id == root.trace_id:
                found.append(span)
                frontier.append(span.span_id)
    return found


def all_values(received: Received) -> list[str]:
    values = [str(v) for span in received.spans for v in span.attributes.values()]
    values += [str(v) for point in received.points for v in point.attributes.values()]
    return values


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.server("the process's exporters are the point: spans sent over OTLP to a receiver")
async def test_spans_and_metrics_over_otlp_http(tmp_path: Path, model_dir: Path) -> None:
    received = Received()
    with HttpReceiver(received) as receiver:
        server = ServerProcess(tmp_path / "data", env=export_env(receiver.endpoint, OTEL_SERVICE_NAME="symbiote-test"))
        server.start()
        try:
            texts = await session(server, uuid.uuid4().hex[:8])
            assert received.wait_for(
                lambda r: (
                    r.named("tools/call search_memory") and any(p.metric == "symbiote.memory.count" for p in r.points)
                )
            )
        finally:
            assert server.stop() == 0  # a clean exit flushes what is left
    log = server.log()
    assert "symbiote started" in log and "telemetry: OTLP traces (http/protobuf), OTLP metrics (http/protobuf)" in log

    searches = received.named("tools/call search_memory")
    traced = next(span for span in searches if span.trace_id == TRACEPARENT_TRACE)
    assert traced.parent_id == TRACEPARENT_SPAN and traced.kind == SERVER
    assert traced.attributes["mcp.method.name"] == "tools/call"
    assert traced.attributes["gen_ai.tool.name"] == "search_memory"
    assert traced.attributes["gen_ai.operation.name"] == "execute_tool"
    assert traced.attributes["mcp.protocol.version"] and traced.attributes["jsonrpc.request.id"]
    assert traced.attributes["network.transport"] == "tcp" and "error.type" not in traced.attributes
    assert traced.resource["service.name"] == "symbiote-test"
    below = descendants(received.spans, traced)
    assert ENGINE_SPANS <= {span.name for span in below}, below
    parent = next(span for span in below if span.name == "candidate search")  # with its store call under it
    assert any(s.name == "store search" and s.parent_id == parent.span_id for s in below), below

    failed = next(span for span in searches if span.trace_id != TRACEPARENT_TRACE)
    assert failed.attributes["error.type"] == "tool_error" and failed.status_code == 2  # STATUS_CODE_ERROR
    stores = received.named("tools/call store_memory")
    written = {s.name for s in descendants(received.spans, stores[0])}
    assert stores and "embedding" in written and any(name.startswith("store ") for name in written), written
    assert received.named("prompts/get venom_identity")[0].attributes["gen_ai.prompt.name"] == "venom_identity"
    assert received.named("server/discover") or received.named("initialize")  # the handshake, by era

    for value in all_values(received):  # no memory text, no query, not even the marker they share
        assert texts["marker"] not in value, value

    durations = [p for p in received.points if p.metric == "mcp.server.operation.duration"]
    by_tool = {(p.attributes.get("gen_ai.tool.name"), p.attributes.get("error.type")) for p in durations}
    assert {("search_memory", None), ("search_memory", "tool_error"), ("store_memory", None)} <= by_tool
    assert all(p.attributes["mcp.method.name"] for p in durations)
    counts = [p.value for p in received.points if p.metric == "symbiote.memory.count"]
    sizes = [p.value for p in received.points if p.metric == "symbiote.store.size"]
    assert counts and counts[-1] == 1 and sizes and sizes[-1] > 0


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.server("the process's exporters are the point: spans sent over OTLP gRPC to a receiver")
async def test_spans_over_otlp_grpc(tmp_path: Path, model_dir: Path) -> None:
    received = Received()
    with GrpcReceiver(received) as receiver:
        server = ServerProcess(tmp_path / "data", env=export_env(receiver.endpoint, "grpc")).start()
        try:
            await session(server, uuid.uuid4().hex[:8])
            assert received.wait_for(
                lambda r: (
                    bool(r.named("tools/call search_memory"))
                    and any(p.metric == "mcp.server.operation.duration" for p in r.points)
                )
            )
        finally:
            server.stop()
    assert received.requests.keys() == {"grpc"}
    traced = next(s for s in received.named("tools/call search_memory") if s.trace_id == TRACEPARENT_TRACE)
    assert traced.parent_id == TRACEPARENT_SPAN
    assert ENGINE_SPANS <= {span.name for span in descendants(received.spans, traced)}
    assert "telemetry: OTLP traces (grpc), OTLP metrics (grpc)" in server.log()


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.server("the process is the point: a stdio server's exporters")
async def test_spans_over_stdio(tmp_path: Path, model_dir: Path) -> None:
    """The same middleware serves stdio: one span per request, `network.transport=pipe`."""
    received = Received()
    with HttpReceiver(received) as receiver:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "symbiote", "serve", "--transport", "stdio"],
            env={
                **os.environ,
                **export_env(receiver.endpoint),
                "CHROMADB_PATH": str(tmp_path / "data"),
                "SYMBIOTE_MODEL_DIR": str(model_dir),
                "HF_HUB_OFFLINE": "1",
            },
        )
        async with Client(params) as client:
            await client.call_tool("store_memory", {"content": "We sail on Sundays"})
            await client.call_tool("search_memory", {"query": "when do we sail?"}, meta={"traceparent": TRACEPARENT})
        assert received.wait_for(lambda r: bool(r.named("tools/call search_memory")))
    traced = received.named("tools/call search_memory")[0]
    assert traced.attributes["network.transport"] == "pipe" and traced.parent_id == TRACEPARENT_SPAN
    assert ENGINE_SPANS <= {s.name for s in descendants(received.spans, traced)}


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.server("the process's exporters are the point: the Azure distro set up at start")
async def test_application_insights_through_the_distro(tmp_path: Path, model_dir: Path) -> None:
    """APPLICATIONINSIGHTS_CONNECTION_STRING: requests, dependencies, the metrics and the start line
    reach the ingestion API (a loopback stand-in), and nothing of the memory does."""
    with AppInsightsReceiver() as receiver:
        server = ServerProcess(tmp_path / "data", env=receiver.env).start()
        try:
            texts = await session(server, uuid.uuid4().hex[:8])
        finally:
            assert server.stop() == 0
        names = lambda kind: {item.get("name") for item in receiver.of_kind(kind)}  # noqa: E731
        assert receiver_waits(lambda: "tools/call search_memory" in names("RequestData"))
    requests = {item["name"]: item for item in receiver.of_kind("RequestData")}
    assert requests["tools/call search_memory"]["properties"]["gen_ai.tool.name"] == "search_memory"
    assert ENGINE_SPANS <= names("RemoteDependencyData")
    metrics = names("MetricData") | {m["name"] for d in receiver.of_kind("MetricData") for m in d.get("metrics", [])}
    assert {"mcp.server.operation.duration", "symbiote.memory.count"} <= metrics
    messages = [item["message"] for item in receiver.of_kind("MessageData")]
    assert any(message.startswith("symbiote started") for message in messages)
    assert texts["marker"] not in json.dumps(receiver.items)


def receiver_waits(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not check():
        time.sleep(0.1)
    return check()


@pytest.mark.slow
def test_without_an_exporter_the_sdk_is_never_imported(tmp_path: Path, model_dir: Path) -> None:
    """A stdio session without OTEL_* or Application Insights: the process never imports the SDK."""
    probe = (
        "import asyncio, sys\n"
        "from symbiote import logs\n"
        "from symbiote.config import Settings\n"
        "logs.configure('INFO')\n"
        "from symbiote.memory.requests import SearchRequest, StoreRequest\n"
        "from symbiote.runtime import build_runtime\n"
        "runtime = build_runtime(Settings.from_env())\n"
        "async def go():\n"
        "    await runtime.engine.store(StoreRequest('a note about the sea', None))\n"
        "    await runtime.engine.search(SearchRequest('the sea'))\n"
        "asyncio.run(go())\n"
        "runtime.close()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter', 'azure.monitor')))\n"
        "print('LOADED', loaded)\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "CHROMADB_PATH": str(tmp_path / "data"),
        "SYMBIOTE_MODEL_DIR": str(model_dir),
        "HF_HUB_OFFLINE": "1",
        "HOME": str(tmp_path),
    }
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout
    assert "symbiote started" in out.stderr and "telemetry: off" in out.stderr


def test_plan_reads_the_standard_variables() -> None:
    from symbiote.telemetry.export import plan

    assert not plan({}).exporting
    assert plan({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}).otlp_traces == "http/protobuf"
    grpc = plan({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert grpc.otlp_traces == "grpc" and grpc.otlp_metrics is None
    assert plan({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}).otlp_traces is None
    assert plan({"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=x"}).azure
    assert not plan({"APPLICATIONINSIGHTS_CONNECTION_STRING": "x", "OTEL_SDK_DISABLED": "true"}).exporting


def test_settings_check_the_telemetry_variables() -> None:
    from symbiote.config import ConfigError, Settings

    assert Settings.from_env({}).log_format == "text"
    assert (
        Settings.from_env(
            {"CONTAINER_APP_NAME": "s", "CONTAINER_APP_ENV_DNS_SUFFIX": "x.azurecontainerapps.io"}
        ).log_format
        == "json"
    )
    assert Settings.from_env({"WEBSITE_HOSTNAME": "s.azurewebsites.net", "LOG_FORMAT": "text"}).log_format == "text"
    assert Settings.from_env({"SYMBIOTE_TRACE_CONTENT": "on"}).trace_content
    with pytest.raises(ConfigError) as bad:
        Settings.from_env(
            {"LOG_FORMAT": "xml", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "SYMBIOTE_TRACE_CONTENT": "maybe"}
        )
    assert "LOG_FORMAT" in str(bad.value) and "OTEL_EXPORTER_OTLP_PROTOCOL" in str(bad.value)
    assert "SYMBIOTE_TRACE_CONTENT" in str(bad.value)
