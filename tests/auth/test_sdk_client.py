"""The MCP SDK's own OAuth client (`mcp.client.auth.OAuthClientProvider`) connects the way a real
connector does: 401 -> protected-resource metadata -> authorization-server metadata -> dynamic
registration -> the browser step (here: httpx playing the owner on the consent page) -> code
exchange with PKCE -> MCP calls; later a refresh, and a reconnect from stored credentials. What
the 2026-07-28 authorization text asks of the server, as that client reads it: the scope in the
challenge, and RFC 9207 `iss` advertised and then required.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, TokenStorage
from mcp.client.auth.utils import extract_scope_from_www_auth
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from tests.auth.support import OWNER_SECRET, REDIRECT_URI, query_of
from tests.conftest import ServerProcess

pytestmark = pytest.mark.server("the transport is the point: the SDK's OAuth client over real HTTP and legacy SSE")


class MemoryTokenStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Owner:
    """The person in front of the browser: opens the authorization URL and approves on the consent page."""

    def __init__(self, *, drop_iss: bool = False) -> None:
        """`drop_iss`: the response reaches the client without its issuer (a mix-up attack's shape)."""
        self.visits: list[str] = []
        self.result: AuthorizationCodeResult | None = None
        self.drop_iss = drop_iss

    async def redirect_handler(self, authorization_url: str) -> None:
        self.visits.append(authorization_url)
        async with httpx.AsyncClient(timeout=30) as browser:
            consent = await browser.get(authorization_url)
            assert consent.status_code == 302, consent.text
            page = await browser.get(consent.headers["location"])
            assert page.status_code == 200 and "SDK connector" in page.text
            ticket = query_of(consent.headers["location"])["ticket"]
            origin = authorization_url.split("/authorize")[0]
            approved = await browser.post(
                f"{origin}/oauth/consent", data={"ticket": ticket, "owner_secret": OWNER_SECRET, "decision": "approve"}
            )
            assert approved.status_code == 302, approved.text
        params = query_of(approved.headers["location"])
        iss = None if self.drop_iss else params.get("iss")
        self.result = AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=iss)

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def connector(
    server: ServerProcess,
    storage: MemoryTokenStorage,
    owner: Owner,
    on_response: Callable[[httpx2.Response], Awaitable[None]] | None = None,
    url: str | None = None,
) -> tuple[Client, OAuthClientProvider]:
    """The SDK's client signing in to `url` (default `/mcp`; a URL ending in `/sse` connects over legacy SSE)."""
    url = url or server.mcp_url
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="SDK connector",
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=owner.redirect_handler,
        callback_handler=owner.callback_handler,
    )
    if url.endswith("/sse"):
        return Client(sse_client(url, auth=auth, timeout=60)), auth
    hooks = {"response": [on_response]} if on_response else {}
    http = httpx2.AsyncClient(auth=auth, timeout=60, event_hooks=hooks)
    return Client(streamable_http_client(url, http_client=http)), auth


async def test_the_sdk_oauth_client_completes_the_flow_refreshes_and_reconnects(oauth_server: ServerProcess) -> None:
    storage, owner = MemoryTokenStorage(), Owner()
    client, auth = connector(oauth_server, storage, owner)
    async with client:
        stored = await client.call_tool("store_memory", {"content": "The SDK client connected through OAuth"})
        found = await client.call_tool("search_memory", {"query": "how did the SDK client connect?"})
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert len(owner.visits) == 1
        assert storage.tokens is not None and storage.tokens.refresh_token
        first = storage.tokens

        # The access token runs out: the client refreshes on its own (rotation: both tokens change).
        auth.context.token_expiry_time = time.time() - 1
        assert not (await client.call_tool("memory_stats", {})).is_error
        assert storage.tokens.access_token != first.access_token and storage.tokens.refresh_token != first.refresh_token
    assert len(owner.visits) == 1
    assert (
        not stored.is_error
        and found.structured_content["results"][0]["memory_id"] == stored.structured_content["memory_id"]
    )
    assert {"store_memory", "search_memory", "search", "fetch"} <= tools
    assert storage.client_info is not None and storage.client_info.client_secret

    # A new process of the same connector, from its stored credentials: no second sign-in.
    again, _auth = connector(oauth_server, storage, owner)
    async with again:
        assert not (await again.call_tool("search_memory", {"query": "SDK client"})).is_error
    assert len(owner.visits) == 1


async def test_the_sdk_oauth_client_signs_in_over_legacy_sse(oauth_server: ServerProcess) -> None:
    """A client that speaks only the legacy SSE pair: 401 from /sse -> the metadata of `<origin>/sse`
    -> registration -> consent -> a token for `<origin>/sse` -> GET /sse and POST /messages/..."""
    sse_url = f"{oauth_server.base_url}/sse"
    storage, owner = MemoryTokenStorage(), Owner()
    client, auth = connector(oauth_server, storage, owner, url=sse_url)
    async with client:
        stored = await client.call_tool("store_memory", {"content": "The SSE-only client signed in with OAuth"})
        found = await client.call_tool("search_memory", {"query": "how did the SSE client sign in?"})
    assert not stored.is_error and not found.is_error, (stored, found)
    assert found.structured_content["results"][0]["memory_id"] == stored.structured_content["memory_id"]
    assert len(owner.visits) == 1 and query_of(owner.visits[0])["resource"] == sse_url
    metadata = auth.context.protected_resource_metadata
    assert metadata is not None and str(metadata.resource) == sse_url
    assert storage.tokens is not None

    # One server, one owner: the token for `/sse` also opens `/mcp` (and a token for `/mcp`, `/sse`).
    bearer = {"Authorization": f"Bearer {storage.tokens.access_token}"}
    async with (
        httpx2.AsyncClient(headers=bearer, timeout=60) as http,
        Client(streamable_http_client(oauth_server.mcp_url, http_client=http)) as mcp_client,
    ):
        assert not (await mcp_client.call_tool("memory_stats", {})).is_error


def causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, the exceptions a group holds and the causes of each, depth first."""
    yield exc
    for inner in exc.exceptions if isinstance(exc, BaseExceptionGroup) else ():
        yield from causes(inner)
    if exc.__cause__ is not None:
        yield from causes(exc.__cause__)


async def test_the_sdk_client_takes_the_challenge_scope_and_holds_the_server_to_its_iss(
    oauth_server: ServerProcess,
) -> None:
    challenges: list[httpx2.Response] = []

    async def keep_challenge(response: httpx2.Response) -> None:
        if response.status_code == 401:
            challenges.append(response)

    owner = Owner()
    client, auth = connector(oauth_server, MemoryTokenStorage(), owner, keep_challenge)
    async with client:
        assert not (await client.call_tool("memory_stats", {})).is_error
    assert [extract_scope_from_www_auth(challenge) for challenge in challenges] == ["memory"]
    assert query_of(owner.visits[0])["scope"] == "memory"
    assert auth.context.oauth_metadata is not None
    assert auth.context.oauth_metadata.authorization_response_iss_parameter_supported is True

    # The server said its responses carry `iss`: one that arrives without it is refused.
    stripped = Owner(drop_iss=True)
    client, _auth = connector(oauth_server, MemoryTokenStorage(), stripped)
    with pytest.raises(BaseException) as refused:
        async with client:
            await client.call_tool("memory_stats", {})
    flow_errors = [exc for exc in causes(refused.value) if isinstance(exc, OAuthFlowError)]
    assert flow_errors and "missing iss" in str(flow_errors[0]), repr(refused.value)
    assert len(stripped.visits) == 1
