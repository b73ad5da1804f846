"""Logs an operator can search, and nothing in them that a reader should not see.

A real `symbiote serve` at LOG_LEVEL=DEBUG with LOG_FORMAT=json and an OTLP exporter (so the
MCP SDK's, uvicorn's and the OpenTelemetry SDK's own DEBUG lines are all there) goes through a
whole session: OAuth sign-in and calls, an API key over streamable HTTP and over legacy SSE
(whose session id rides in the query string), stores, searches, a tool error. Then no owner
secret, token, client secret, authorization code, API key, memory text or query is in its output,
and every line is one JSON object with the keys, the trace ids set inside a request.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from symbiote.telemetry.json_logs import JsonFormatter
from symbiote.telemetry.redaction import RedactingFilter, redact
from tests.auth.support import OWNER_SECRET, oauth_env
from tests.auth.test_sdk_client import MemoryTokenStorage, Owner, connector
from tests.conftest import ServerProcess
from tests.telemetry.support import HttpReceiver, Received, export_env

KEYS = {"timestamp", "level", "logger", "message", "trace_id", "span_id"}


@pytest.fixture
def debug_server(tmp_path: Path, model_dir: Path) -> Iterator[tuple[ServerProcess, str]]:
    from symbiote.auth import AuthStore, default_auth_db

    data = tmp_path / "data"
    data.mkdir()
    store = AuthStore(default_auth_db(data))
    _key, api_key = store.create_api_key("laptop")
    store.close()
    with HttpReceiver(Received()) as receiver:
        env = oauth_env(LOG_LEVEL="DEBUG", LOG_FORMAT="json", **export_env(receiver.endpoint))
        server = ServerProcess(data, env=env).start()
        try:
            yield server, api_key
        finally:
            server.stop()


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.server("the process is the point: what a debug-level `symbiote serve` writes to its log")
async def test_a_debug_session_logs_no_secret_and_no_memory_text(debug_server: tuple[ServerProcess, str]) -> None:
    server, api_key = debug_server
    marker = uuid.uuid4().hex[:10]
    texts = {
        "oauth memory": f"Our {marker} anniversary dinner is at Chez Lune",
        "oauth query": f"where is the {marker} anniversary dinner",
        "key memory": f"The {marker} garage code is kept by the neighbour",
        "sse query": f"who keeps the {marker} garage code",
    }
    storage, owner = MemoryTokenStorage(), Owner()
    client, _auth = connector(server, storage, owner)
    async with client:
        assert not (await client.call_tool("store_memory", {"content": texts["oauth memory"]})).is_error
        assert not (await client.call_tool("search_memory", {"query": texts["oauth query"]})).is_error
        assert (await client.call_tool("get_memory", {"memory_id": "mem_00000000000000000001"})).is_error
    headers = {"Authorization": f"Bearer {api_key}"}
    async with Client(streamable_http_client(server.mcp_url, http_client=httpx2.AsyncClient(headers=headers))) as keyed:
        assert not (await keyed.call_tool("store_memory", {"content": texts["key memory"]})).is_error
    async with Client(sse_client(server.base_url + "/sse", headers=headers), mode="legacy") as legacy:
        found = await legacy.call_tool("search_memory", {"query": texts["sse query"]})
        assert marker in str(found.structured_content)  # the answer carried the memory; the log must not
    server.stop()

    assert storage.tokens is not None and storage.client_info is not None and owner.result is not None
    secrets = {
        "owner secret": OWNER_SECRET,
        "access token": storage.tokens.access_token,
        "refresh token": storage.tokens.refresh_token,
        "client secret": storage.client_info.client_secret,
        "authorization code": owner.result.code,
        "api key": api_key,
        "marker": marker,  # in every memory and query above
        **texts,
    }
    log = server.log()
    leaks = {name for name, value in secrets.items() if value and value in log}
    assert not leaks, f"{leaks} in the log"
    assert not re.search(r"/messages/[0-9a-f]{32}", log)  # a legacy SSE session's whole id

    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert len(entries) > 20 and all(KEYS <= entry.keys() for entry in entries)
    assert any(entry["level"] == "DEBUG" for entry in entries)
    assert any(e["message"].startswith("symbiote started") and e["logger"] == "symbiote" for e in entries)
    assert any(entry["trace_id"] and entry["span_id"] for entry in entries)  # lines logged inside a request
    assert any("[redacted]" in entry["message"] for entry in entries)  # something needed masking


def test_redact_masks_shapes_not_values() -> None:
    line = (
        "GET /authorize?client_id=c1&code=abc123&state=s HTTP/1.1 Authorization: Bearer sym_at_0123456789abcdef "
        '{"content": "we like tea", "tags": ["x"], "query": "tea?"} arguments={\'text\': \'milk\'} '
        "CallToolRequestParams(name='store_memory', content='sugar') refresh sym_rt_ABCDEFGHIJKL"
    )
    clean = redact(line)
    for value in ("abc123", "0123456789abcdef", "we like tea", "tea?", "milk", "sugar", "ABCDEFGHIJKL"):
        assert value not in clean, clean
    for kept in ("client_id=c1", "state=s", '"tags": ["x"]', "name='store_memory'"):
        assert kept in clean, clean


def test_json_lines_and_the_filter_on_a_traceback() -> None:
    record = logging.LogRecord("symbiote.x", logging.ERROR, __file__, 1, "failed for %s", ("token=t0psecret",), None)
    try:
        raise ValueError("content='the secret diary'")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    RedactingFilter().filter(record)
    entry = json.loads(JsonFormatter().format(record))
    assert KEYS <= entry.keys() and entry["level"] == "ERROR" and entry["logger"] == "symbiote.x"
    assert "t0psecret" not in json.dumps(entry) and "secret diary" not in json.dumps(entry)
    assert entry["message"] == "failed for token=[redacted]" and "ValueError" in entry["exception"]
