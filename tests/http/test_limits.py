"""The HTTP surface's limits: request bodies capped (413, never a crash), CORS only where configured.
On `symbiote serve` where the bytes on the socket are the point (bodies cut, announced lengths, a
stream's endpoint); the auth endpoints' caps and CORS, configured or not, through the app in this process."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client
from starlette.applications import Starlette

from symbiote.config import ConfigError, Settings
from tests.auth.support import oauth_env
from tests.conftest import InProcess, ServerProcess, make_app

LIMIT = 4096
APP = "https://app.example.com"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    env = {"SYMBIOTE_MAX_BODY_BYTES": str(LIMIT), "SYMBIOTE_CORS_ORIGINS": APP}
    proc = ServerProcess(tmp_path_factory.mktemp("limited") / "data", env=env).start()
    yield proc
    proc.stop()


def configured(settings: Settings, **environ: str) -> Starlette:
    """The app in this process on `settings` with `environ`'s variables read as `symbiote serve` reads them."""
    read = Settings.from_env({**environ, "CHROMADB_PATH": str(settings.chromadb_path)})
    return make_app(dataclasses.replace(read, model_dir=settings.model_dir, store_process=False))


def in_app(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=10)


def big_rpc(size: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * size + b'"}}'


async def chunks(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 1000):  # no Content-Length: chunked transfer encoding
        yield body[start : start + 1000]


async def announce_only(port: int, path: str, length: int) -> int:
    """Send only the headers of a POST announcing `length` bytes; the status of the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n".encode()
        )
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        return int(status_line.split()[1])
    finally:
        writer.close()


@pytest.mark.server("the bytes on the socket are the point: bodies cut and lengths announced")
async def test_oversized_bodies_get_413_on_mcp_and_messages(limited: ServerProcess) -> None:
    async with httpx.AsyncClient(base_url=limited.base_url, timeout=10) as http:
        declared = await http.post("/mcp", content=big_rpc(LIMIT * 4), headers=MCP_HEADERS)
        assert declared.status_code == 413 and "SYMBIOTE_MAX_BODY_BYTES" in declared.text
        streamed = await http.post("/mcp", content=chunks(big_rpc(LIMIT * 4)), headers=MCP_HEADERS)
        assert streamed.status_code == 413
        assert await announce_only(limited.port, "/mcp", 20 * 1024 * 1024) == 413  # answered before any body is read
        async with http.stream("GET", "/sse") as stream:
            lines = stream.aiter_lines()  # kept referenced: a dropped iterator closes the stream
            endpoint = ""
            while not endpoint.startswith("/messages/"):
                endpoint = (await lines.__anext__()).removeprefix("data:").strip()
            oversized = await http.post(endpoint, content=big_rpc(LIMIT * 2), headers=MCP_HEADERS)
            assert oversized.status_code == 413
            fine = await http.post(endpoint, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=MCP_HEADERS)
            assert fine.status_code == 202
        assert (await http.get("/health")).json()["status"] == "ok"
    # A body under the cap is served as usual.
    async with Client(limited.mcp_url) as client:
        stored = await client.call_tool("store_memory", {"content": "a normal sized memory " * 20})
        assert not stored.is_error


async def test_oversized_bodies_get_413_on_the_auth_endpoints(settings: Settings) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    app = configured(settings, **oauth_env(SYMBIOTE_MAX_BODY_BYTES=str(LIMIT)))
    async with app.router.lifespan_context(app), in_app(app) as http:
        for path, headers in (
            ("/token", form),
            ("/register", MCP_HEADERS),
            ("/revoke", form),
            ("/oauth/consent", form),
        ):
            response = await http.post(path, content=b"a=" + b"x" * (LIMIT * 3), headers=headers)
            assert response.status_code == 413, (path, response.status_code, response.text)
        # Under the cap the endpoints answer as they always did.
        assert (await http.post("/token", data={"grant_type": "authorization_code"})).status_code in (400, 401)
        assert (await http.get("/health")).json()["status"] == "ok"


async def test_cors_allows_only_the_configured_origin(settings: Settings) -> None:
    asked = "content-type, mcp-protocol-version, mcp-method, mcp-name, authorization"  # a 2026-07-28 client's
    preflight = {"Origin": APP, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": asked}
    app = configured(settings, SYMBIOTE_MAX_BODY_BYTES=str(LIMIT), SYMBIOTE_CORS_ORIGINS=APP)
    async with app.router.lifespan_context(app), in_app(app) as http:
        allowed = await http.options("/mcp", headers=preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == APP
        assert set(allowed.headers["access-control-allow-methods"].replace(" ", "").split(",")) >= {
            "GET",
            "POST",
            "OPTIONS",
        }
        allowed_headers = allowed.headers["access-control-allow-headers"].lower()
        for header in (
            "mcp-session-id",
            "mcp-protocol-version",
            "mcp-method",
            "mcp-name",
            "authorization",
            "content-type",
        ):
            assert header in allowed_headers
        assert "access-control-allow-credentials" not in allowed.headers
        ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        call = await http.post("/mcp", content=ping, headers={**MCP_HEADERS, "Origin": APP})
        assert call.status_code == 200 and call.headers["access-control-allow-origin"] == APP
        refused = await http.options("/mcp", headers={**preflight, "Origin": "https://evil.example.com"})
        assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
        foreign = await http.post("/mcp", content=ping, headers={**MCP_HEADERS, "Origin": "https://evil.example.com"})
        assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers


async def test_no_cors_by_default(in_process: InProcess) -> None:
    preflight = {"Origin": APP, "Access-Control-Request-Method": "POST"}
    async with in_process.http() as http:
        response = await http.options("/mcp", headers=preflight)
    assert "access-control-allow-origin" not in response.headers


async def test_cors_and_body_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="SYMBIOTE_CORS_ORIGINS"):
        Settings.from_env({"SYMBIOTE_CORS_ORIGINS": "*"})
    with pytest.raises(ConfigError, match="must be an origin"):
        Settings.from_env({"SYMBIOTE_CORS_ORIGINS": "app.example.com/path"})
    with pytest.raises(ConfigError, match="SYMBIOTE_MAX_BODY_BYTES"):
        Settings.from_env({"SYMBIOTE_MAX_BODY_BYTES": "12"})
    settings = Settings.from_env({"SYMBIOTE_CORS_ORIGINS": "https://a.example.com/, http://localhost:5173"})
    assert settings.cors_origins == ("https://a.example.com", "http://localhost:5173")
    assert Settings.from_env({}).max_body_bytes == 4 * 1024 * 1024
