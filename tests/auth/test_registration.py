"""Open registration refuses what the server will never honour (issue 58): a grant or response type
other than the authorization code (with refresh) is refused with RFC 7591's error, never echoed as
if it worked. The real app in-process with OAuth on."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest

from symbiote.config import Settings
from tests.auth.support import oauth_env
from tests.conftest import make_app

CLIENT: dict[str, Any] = {"client_name": "Claude", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("grant_types", ["authorization_code", "client_credentials"]),
        ("grant_types", ["password"]),
        ("grant_types", ["urn:ietf:params:oauth:grant-type:device_code"]),
        ("response_types", ["token"]),
        ("response_types", ["code", "id_token"]),
    ],
)
async def test_a_grant_or_response_type_never_honoured_is_refused(
    settings: Settings, field: str, value: list[str]
) -> None:
    oauth = dataclasses.replace(Settings.from_env({**oauth_env(), "CHROMADB_PATH": str(settings.chromadb_path)}))
    app = make_app(dataclasses.replace(oauth, model_dir=settings.model_dir, store_process=False))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            refused = await http.post("/register", json={**CLIENT, field: value})
            honoured = await http.post(
                "/register",
                json={**CLIENT, "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]},
            )
    assert refused.status_code == 400, refused.text
    assert (
        refused.json()["error"] == "invalid_client_metadata" and "not supported" in refused.json()["error_description"]
    )
    assert honoured.status_code == 201 and honoured.json()["grant_types"] == ["authorization_code", "refresh_token"]
