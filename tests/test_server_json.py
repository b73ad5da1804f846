"""`server.json`, Symbiote's entry for the MCP Registry: valid against the registry's published
schema (tests/registry/, with its source), and true of the server it describes, as the SDK's client
finds it at the URL the entry's template makes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx2
from jsonschema import Draft7Validator, FormatChecker
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from symbiote import __version__
from symbiote.config import PROJECT_ROOT, Settings
from tests.conftest import make_app

REGISTRY = PROJECT_ROOT / "tests" / "registry"
PUBLISHER = "io.modelcontextprotocol.registry/publisher-provided"


def entry() -> dict[str, Any]:
    return json.loads((PROJECT_ROOT / "server.json").read_text())


def test_the_schema_is_the_registry_s_as_its_source_names_it() -> None:
    schema = (REGISTRY / "server.schema.json").read_bytes()
    assert hashlib.sha256(schema).hexdigest() in (REGISTRY / "SOURCE.md").read_text()
    assert json.loads(schema)["$id"] == "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def test_server_json_is_valid_for_the_registry() -> None:
    schema = json.loads((REGISTRY / "server.schema.json").read_text())
    found = entry()
    problems = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in Draft7Validator(schema, format_checker=FormatChecker()).iter_errors(found)
    ]
    assert not problems, problems
    assert found["$schema"] == schema["$id"]
    assert found["name"] == "io.github.OWNER/symbiote"  # README: OWNER is the publisher's GitHub name
    assert found["version"] == __version__
    assert "OAuth" in found["_meta"][PUBLISHER]["authentication"]
    assert len(json.dumps(found["_meta"][PUBLISHER]).encode()) <= 4096  # the official registry's limit


async def test_the_remote_it_describes_is_this_server(settings: Settings) -> None:
    """The SDK's streamable-HTTP client at the URL the template makes, over the real app and its
    lifespan in this process (an ASGI transport: the same requests, no socket)."""
    found = entry()
    [remote] = found["remotes"]
    assert remote["type"] == "streamable-http" and remote["variables"]["host"]["isRequired"] is True
    url = remote["url"].format(host="127.0.0.1").replace("https://", "http://")  # TLS on a deployment
    app = make_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                info = client.server_info
                tools = {tool.name for tool in (await client.list_tools()).tools}
    assert info is not None and (info.title, info.description, info.version) == (
        found["title"],
        found["description"],
        found["version"],
    )
    assert {"store_memory", "search_memory"} <= tools
