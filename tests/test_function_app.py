"""function_app.py through the real azure.functions objects, driven by the real MCP client.

No Functions host here: the test indexes the app (`get_functions()`), takes the registered user
functions, and calls them with `func.HttpRequest` / `func.TimerRequest` exactly as the Python
worker would. The MCP SDK client talks to the HTTP function through a small httpx transport that
turns each request into a `func.HttpRequest` and each `func.HttpResponse` back into a response.
Real model, real Chroma, a real local-directory share.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
import uuid
from pathlib import Path
from typing import Any

import azure.functions as func
import httpx2
import pytest
from azure.functions.timer import TimerRequest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from symbiote.azure import LocalDirectoryShare
from symbiote.config import Settings
from tests.conftest import shared_model

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_HOST = "symbiote-app.kindsea-1234.eastus.azurecontainerapps.io"


class FunctionTransport(httpx2.AsyncBaseTransport):
    """httpx transport that invokes a registered HTTP function instead of opening a socket."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self.calls = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        self.calls += 1
        req = func.HttpRequest(
            method=request.method,
            url=str(request.url),
            headers={k: v for k, v in request.headers.items()},
            params=dict(request.url.params),
            route_params={"route": request.url.path.lstrip("/")},
            body=body,
        )
        context = types.SimpleNamespace(
            invocation_id=str(uuid.uuid4()),
            function_name="http_app_func",
            function_directory=str(ROOT),
            thread_local_storage=None,
            trace_context=None,
            retry_context=None,
        )
        response: func.HttpResponse = await self.function(req, context)
        return httpx2.Response(
            response.status_code, headers=list(response.headers.items()), content=response.get_body()
        )


def settings_for(tmp: Path, **env: str) -> Settings:
    share = tmp / "share"
    return Settings.from_env(
        {
            "CHROMADB_PATH": str(share / "chroma"),
            "SYMBIOTE_SHARE": "local",
            "SYMBIOTE_SHARE_PATH": str(share),
            "CONTAINER_APP_NAME": "symbiote-app",
            "CONTAINER_APP_ENV_DNS_SUFFIX": "kindsea-1234.eastus.azurecontainerapps.io",
            "SYMBIOTE_LEASE_TTL_SECONDS": "15",
            **env,
        }
    )


def functions_of(app: func.AsgiFunctionApp) -> dict[str, Any]:
    return {fn.get_function_name(): fn for fn in app.get_functions()}  # get_functions() once per app


@pytest.fixture(scope="module")
def fa_module():
    """function_app.py loaded as a module (without its import-time app, which reads the real env)."""
    spec = importlib.util.spec_from_file_location("function_app_under_test", ROOT / "function_app.py")
    module = importlib.util.module_from_spec(spec)
    source = (ROOT / "function_app.py").read_text()
    assert "\napp = build_function_app(Settings.from_env())\n" in source
    code = compile(
        source.replace("\napp = build_function_app(Settings.from_env())\n", "\n"), str(ROOT / "function_app.py"), "exec"
    )
    exec(code, module.__dict__)
    return module


@pytest.fixture(scope="module")
async def deployed(fa_module, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fa")
    settings = settings_for(tmp)
    app = fa_module.build_function_app(settings, load_model=shared_model)  # the test process's one model
    fns = functions_of(app)
    http = fns["http_app_func"].get_user_function()
    # The worker's first invocation starts the ASGI lifespan in its own task, outside any client's
    # task group; do the same here so closing an MCP client never cancels the app's lifespan.
    async with http_client(http) as client:
        assert (await client.get("/health")).status_code == 200
    yield types.SimpleNamespace(app=app, fns=fns, settings=settings, tmp=tmp, http=http)
    await shutdown(app)


async def shutdown(app: func.AsgiFunctionApp) -> None:
    if app.startup_task_done:
        await app.middleware.notify_shutdown()
        app.startup_task_done = False


def http_client(function: Any, host: str = "127.0.0.1:7071", scheme: str = "http") -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=FunctionTransport(function), base_url=f"{scheme}://{host}")


def mcp_client(function: Any, host: str = "127.0.0.1:7071", scheme: str = "http") -> Client:
    return Client(streamable_http_client(f"{scheme}://{host}/mcp", http_client=http_client(function, host, scheme)))


def test_indexing_registers_http_and_timer_functions(deployed):
    assert set(deployed.fns) == {"http_app_func", "snapshot_share"}
    http = json.loads(deployed.fns["http_app_func"].get_function_json())
    trigger = next(b for b in http["bindings"] if b["type"] == "httpTrigger")
    assert trigger["authLevel"].lower() == "anonymous"  # connectors cannot send x-functions-key
    assert trigger["route"] == "/{*route}"
    assert {"GET", "POST", "DELETE"} <= {m.upper() for m in trigger["methods"]}
    timer = json.loads(deployed.fns["snapshot_share"].get_function_json())
    binding = next(b for b in timer["bindings"] if b["type"] == "timerTrigger")
    assert binding["schedule"] == "0 0 3 * * *" and binding["runOnStartup"] is False


def test_host_json_routes_everything_to_the_app():
    host = json.loads((ROOT / "host.json").read_text())
    assert host["version"] == "2.0"
    assert host["extensions"]["http"]["routePrefix"] == ""
    assert "extensionBundle" not in host  # HTTP and timer are built in: nothing to download at start


async def test_mcp_session_through_the_function(deployed):
    async with mcp_client(deployed.http) as client:
        assert client.server_info.name == "symbiote"
        assert "search_memory" in (client.instructions or "")
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "store_memory",
            "search_memory",
            "get_memory",
            "delete_memory",
            "list_memories",
            "memory_stats",
        } <= tools
        stored = await client.call_tool(
            "store_memory",
            {"content": "We are building Symbiote on Azure Functions in Container Apps.", "tags": ["azure"]},
        )
        assert not stored.is_error, stored
        memory_id = stored.structured_content["memory_id"]
        found = await client.call_tool("search_memory", {"query": "Where does Symbiote run in Azure?"})
        assert not found.is_error
        assert found.structured_content["results"][0]["memory_id"] == memory_id
        stats = await client.call_tool("memory_stats", {})
        assert not stats.is_error and stats.structured_content["share"]["kind"] == "local"  # the share's usage
        prompt = await client.get_prompt("venom_identity")
        text = prompt.messages[0].content.text
        assert text == (ROOT / "personalities" / "venom_personality.md").read_text(encoding="utf-8")


async def test_health_reports_personality_writer_and_share(deployed):
    async with http_client(deployed.http) as http:
        for path in ("/", "/health"):
            response = await http.get(path)
            assert response.status_code == 200
            report = response.json()
            assert report["personality"] == "default"
            assert report["status"] == "ok"
            assert report["writer"]["state"] == "writer"
            assert report["share"]["kind"] == "local"
            assert report["share"]["quota_mb"] > 0 and report["share"]["percent_used"] is not None


async def test_get_on_mcp_is_405(deployed):
    async with http_client(deployed.http) as http:
        response = await http.get("/mcp", headers={"accept": "text/event-stream"})
    assert response.status_code == 405


async def test_foreign_host_is_421_and_platform_host_is_accepted(deployed):
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with http_client(deployed.http, host="evil.example.com") as http:
        response = await http.post("/mcp", json=body, headers=headers)
    assert response.status_code == 421
    # The public name comes from CONTAINER_APP_NAME + CONTAINER_APP_ENV_DNS_SUFFIX alone: no 421.
    async with mcp_client(deployed.http, host=PUBLIC_HOST, scheme="https") as client:
        assert (await client.list_tools()).tools


async def test_timer_function_takes_a_point_in_time_snapshot(deployed):
    share = LocalDirectoryShare(deployed.settings.share_path)
    timer = deployed.fns["snapshot_share"].get_user_function()
    before = {s.snapshot_id for s in share.list_snapshots()}
    timer(TimerRequest(past_due=False))
    after = share.list_snapshots()
    new = [s for s in after if s.snapshot_id not in before]
    assert len(new) == 1
    copy = share.snapshot_path(new[0])
    assert (copy / "chroma" / "chroma.sqlite3").is_file()
    assert not (copy / ".symbiote").exists() and not (copy / ".snapshots").exists()
    # Later writes change the live store, never the snapshot.
    frozen = (copy / "chroma" / "chroma.sqlite3").read_bytes()
    async with mcp_client(deployed.http) as client:
        result = await client.call_tool("store_memory", {"content": "Snapshots are taken daily at three."})
        assert not result.is_error
    assert (copy / "chroma" / "chroma.sqlite3").read_bytes() == frozen
    # Pruning keeps SYMBIOTE_SNAPSHOT_KEEP (7).
    for _ in range(8):
        timer(TimerRequest(past_due=True))
    assert len(share.list_snapshots()) == 7


async def test_second_instance_on_the_same_share_is_read_only_until_the_writer_leaves(deployed, fa_module):
    standby_app = fa_module.build_function_app(deployed.settings, load_model=shared_model)
    standby = functions_of(standby_app)["http_app_func"].get_user_function()
    try:
        async with http_client(standby) as http:
            report = (await http.get("/health")).json()
        assert report["status"] == "degraded" and report["read_only"] is True
        assert report["writer"]["state"] == "standby"
        assert "holds the writer lease" in report["writer"]["message"]
        async with mcp_client(standby) as client:
            refused = await client.call_tool("store_memory", {"content": "Written by the second instance."})
            assert refused.is_error
            assert "read-only" in refused.content[0].text and "writer lease" in refused.content[0].text
            found = await client.call_tool("search_memory", {"query": "Where does Symbiote run in Azure?"})
            assert not found.is_error and found.structured_content["count"] >= 1  # reads still work

        # The writer leaves (its lifespan shuts down and releases the lease): the standby takes over.
        await shutdown(deployed.app)
        services = standby_app.symbiote_asgi.state.runtime.share
        assert services.lease.attempt() is True
        async with mcp_client(standby) as client:
            stored = await client.call_tool("store_memory", {"content": "Written after the takeover."})
            assert not stored.is_error, stored
            listed = await client.call_tool("list_memories", {"limit": 50})
            contents = [m["content"] for m in listed.structured_content["memories"]]
            assert "Written after the takeover." in contents
            assert any("Container Apps" in c for c in contents)  # the first writer's data is there
    finally:
        await shutdown(standby_app)


def test_function_app_module_indexes_with_its_own_environment(tmp_path):
    """Import function_app.py as the worker does (module-level `app`), in a clean interpreter."""
    import subprocess

    env = {
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
        "CHROMADB_PATH": str(tmp_path / "share" / "chroma"),
        "SYMBIOTE_SHARE": "local",
        "SYMBIOTE_SHARE_PATH": str(tmp_path / "share"),
        "SYMBIOTE_SNAPSHOT_SCHEDULE": "0 30 2 * * *",
        "WEBSITE_HOSTNAME": "symbiote.azurewebsites.net",
    }
    script = (
        "import json, function_app\n"
        "fns = {f.get_function_name(): json.loads(f.get_function_json()) for f in function_app.app.get_functions()}\n"
        "print(json.dumps(sorted(fns)))\n"
        "print(fns['snapshot_share']['bindings'][0]['schedule'])\n"
        "from symbiote.http.security import allowed_hosts\n"
        "print('symbiote.azurewebsites.net' in allowed_hosts(function_app.app.symbiote_asgi.state.runtime.settings))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-3:] == ['["http_app_func", "snapshot_share"]', "0 30 2 * * *", "True"]
