"""The Azure shape: the app behind `azure.functions.AsgiFunctionApp` at the anonymous auth level, as
the Function runs it on Container Apps, with the in-app OAuth in front of /mcp.

Deployed settings (FUNCTIONS_WORKER_RUNTIME and the Container App's public name) make `oauth` the
default. Requests arrive the way the platform's ingress forwards them (TLS ended, plain http to the
app, X-Forwarded-* headers), and every URL Symbiote hands out uses the public https name.
"""

from __future__ import annotations

import types
import uuid
from pathlib import Path
from typing import Any

import azure.functions as func
import httpx
import pytest

from symbiote.auth.policy import resolve_mode
from symbiote.config import Settings
from tests.auth.support import INITIALIZE, MCP_HEADERS, OWNER_SECRET, REDIRECT_URI, pkce, query_of
from tests.conftest import MODEL_DIR, make_app

PUBLIC = "symbiote-app.kindsea-1234.eastus.azurecontainerapps.io"


class FunctionTransport(httpx.AsyncBaseTransport):
    """httpx transport invoking the registered HTTP function, as the Functions worker would."""

    def __init__(self, function: Any) -> None:
        self.function = function

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        req = func.HttpRequest(
            method=request.method,
            url=str(request.url),
            headers=dict(request.headers.items()),
            params=dict(request.url.params),
            route_params={"route": request.url.path.lstrip("/")},
            body=body,
        )
        context = types.SimpleNamespace(
            invocation_id=str(uuid.uuid4()),
            function_name="http_app_func",
            function_directory=".",
            thread_local_storage=None,
            trace_context=None,
            retry_context=None,
        )
        response: func.HttpResponse = await self.function(req, context)
        return httpx.Response(response.status_code, headers=list(response.headers.items()), content=response.get_body())


@pytest.fixture(scope="module")
async def function(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):  # type: ignore[no-untyped-def]
    settings = Settings.from_env(
        {
            "CHROMADB_PATH": str(tmp_path_factory.mktemp("azure-auth") / "chroma"),
            "SYMBIOTE_MODEL_DIR": str(MODEL_DIR),
            "FUNCTIONS_WORKER_RUNTIME": "python",
            "CONTAINER_APP_NAME": "symbiote-app",
            "CONTAINER_APP_ENV_DNS_SUFFIX": "kindsea-1234.eastus.azurecontainerapps.io",
            "SYMBIOTE_OWNER_SECRET": OWNER_SECRET,
        }
    )
    assert resolve_mode(settings) == "oauth"
    app = func.AsgiFunctionApp(app=make_app(settings, warm_up=False), http_auth_level=func.AuthLevel.ANONYMOUS)
    http = {fn.get_function_name(): fn for fn in app.get_functions()}["http_app_func"].get_user_function()
    yield http
    if app.startup_task_done:
        await app.middleware.notify_shutdown()
        app.startup_task_done = False  # else its __del__ runs the shutdown again, in whatever loop is running


def ingress(function: Any) -> httpx.AsyncClient:
    """What the app sees behind Container Apps' ingress: http inside, the client's https outside."""
    return httpx.AsyncClient(
        transport=FunctionTransport(function),
        base_url=f"http://{PUBLIC}",
        headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": PUBLIC, "X-Forwarded-For": "203.0.113.7"},
    )


async def test_the_function_requires_a_token_and_advertises_its_public_https_name(function: Any) -> None:
    async with ingress(function) as http:
        health = await http.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        refused = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401
        assert (
            f'resource_metadata="https://{PUBLIC}/.well-known/oauth-protected-resource/mcp"'
            in refused.headers["www-authenticate"]
        )
        meta = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert meta["issuer"] == f"https://{PUBLIC}" and meta["authorization_endpoint"] == f"https://{PUBLIC}/authorize"
        assert (await http.get("/mcp")).status_code == 405


async def test_a_connector_signs_in_through_the_function(function: Any) -> None:
    async with ingress(function) as http:
        client = (await http.post("/register", json={"client_name": "Claude", "redirect_uris": [REDIRECT_URI]})).json()
        verifier, challenge = pkce()
        authorize = await http.get(
            "/authorize",
            params={
                "response_type": "code",
                "client_id": client["client_id"],
                "redirect_uri": REDIRECT_URI,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": "st",
                "resource": f"https://{PUBLIC}/mcp",
            },
        )
        assert authorize.status_code == 302
        consent_url = authorize.headers["location"]
        assert consent_url.startswith(f"https://{PUBLIC}/oauth/consent?ticket=")
        ticket = query_of(consent_url)["ticket"]
        approved = await http.post(
            "/oauth/consent", data={"ticket": ticket, "owner_secret": OWNER_SECRET, "decision": "approve"}
        )
        assert approved.status_code == 302
        code = query_of(approved.headers["location"])
        assert code["iss"] == f"https://{PUBLIC}" and code["state"] == "st"
        tokens = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code["code"],
                "redirect_uri": REDIRECT_URI,
                "client_id": client["client_id"],
                "client_secret": client["client_secret"],
                "code_verifier": verifier,
            },
        )
        assert tokens.status_code == 200, tokens.text
        bearer = {**MCP_HEADERS, "Authorization": f"Bearer {tokens.json()['access_token']}"}
        init = await http.post("/mcp", json=INITIALIZE, headers=bearer)
        assert init.status_code == 200 and init.json()["result"]["serverInfo"]["name"] == "symbiote"
        listed = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=bearer)
        names = {tool["name"] for tool in listed.json()["result"]["tools"]}
        assert {"search_memory", "search", "fetch"} <= names
