"""The memory card: an MCP App (the MCP Apps extension, `io.modelcontextprotocol/ui`) that shows in
the conversation what storing, a search or a list did, and lets the owner correct it on the spot.

`store_memory`, `store_memories`, `search_memory` and `list_memories` name the card's `ui://` view
(`VIEW_META`); a host with the extension renders it in a sandboxed frame and hands it the call's
arguments and result. The card's own actions (forget, undo a forget, mark outdated) are tools only
the view can call (`_meta.ui.visibility: ["app"]`); its edits and links use the tools the model
already has. Every call from the view comes through the host's connection: the same token, the same
owner, the same checks as the model's calls.

A host without the extension sees what it saw before the card: `CardGate` leaves the view-only
tools, the `ui://` resource and the tools' `_meta.ui` out of what it lists for a client known not to
support the extension, and refuses the view-only tools to every caller not known to support it. A
stateless 2025-11-25 request carries no capabilities: the gate then goes by what the caller's last
`initialize` declared (docs/security.md says what that cannot tell apart).
"""

from __future__ import annotations

import importlib.resources
from collections import OrderedDict
from typing import Annotated, Any

from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, Apps, ResourceCsp
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field
from starlette.requests import Request

from symbiote.mcp.tools import hints, readable_errors
from symbiote.memory import CARD, DeleteResult, MemoryEngine, UpdateRequest, UpdateResult, validation

CARD_URI = "ui://symbiote/memory-card.html"
VIEW_META: dict[str, Any] = {"ui": {"resourceUri": CARD_URI}}  # on the four tools whose result the card shows
VIEW_ONLY = ("card_forget", "card_restore", "card_mark")
OUTDATED = validation.OUTDATED  # the tag the owner's "outdated" puts on a memory: every reply shows it
UNKNOWN_CALLER = "its initialize declaring the MCP Apps extension was not seen by this server, or not lately"
MAX_CLIENTS = 1_000  # callers whose declaration is remembered (the least recent are forgotten)
# No outside origin: the view is one self-contained file and talks only to the host's bridge.
NO_ORIGINS = ResourceCsp(connect_domains=[], resource_domains=[], frame_domains=[], base_uri_domains=[])


class RestoreResult(BaseModel):
    """What card_restore did: the memory is back under its id, or why it is not."""

    memory_id: str
    restored: bool = Field(description="True when the memory is back among the memories.")
    message: str


def card_html() -> str:
    """The built view (`scripts/build-card.sh` makes it from `symbiote/mcp/card/src`), shipped in the package."""
    return (importlib.resources.files("symbiote.mcp") / "card" / "memory-card.html").read_text(encoding="utf-8")


def card_extension(engine: MemoryEngine) -> Apps:
    """The extension: the view and its three view-only tools, over `engine`."""
    apps = Apps()
    apps.add_html_resource(
        CARD_URI,
        card_html(),
        name="memory_card",
        title="Memory card",
        description="What Venom stored, found or listed, with the owner's corrections: forget, undo, edit, link.",
        csp=NO_ORIGINS,
        prefers_border=True,
    )

    @apps.tool(
        resource_uri=CARD_URI,
        visibility=["app"],
        name="card_forget",
        title="Forget (memory card)",
        description="The owner's forget, from the memory card: moves the memory to the trash; card_restore undoes it.",
        annotations=hints("Forget", destructive=True, idempotent=True),
    )
    @readable_errors
    async def card_forget(memory_id: Annotated[str, Field(description="The memory to forget.")]) -> DeleteResult:
        return await engine.delete(memory_id, deleted_by=CARD)

    @apps.tool(
        resource_uri=CARD_URI,
        visibility=["app"],
        name="card_restore",
        title="Undo forget (memory card)",
        description=(
            "Undo the memory card's forget: the memory comes back from the trash with its id, text, tags and links. "
            "Only what the card forgot: what an assistant or the console deleted is restored in the console."
        ),
        annotations=hints("Undo forget", idempotent=True),
    )
    @readable_errors
    async def card_restore(memory_id: Annotated[str, Field(description="The memory forgotten.")]) -> RestoreResult:
        mid = validation.memory_id(memory_id)
        report = await engine.trash.restore([mid], deleted_by=CARD)
        if report.restored:
            return RestoreResult(memory_id=mid, restored=True, message="Memory restored.")
        if report.clashes:
            return RestoreResult(memory_id=mid, restored=False, message=f"Not restored: {report.clashes[0][1]}.")
        return RestoreResult(
            memory_id=mid, restored=False, message="Not restored: it is not in the trash (restored already?)."
        )

    @apps.tool(
        resource_uri=CARD_URI,
        visibility=["app"],
        name="card_mark",
        title="Mark outdated (memory card)",
        description=(
            f"The owner's mark, from the memory card: outdated=true tags the memory '{OUTDATED}' (true once, "
            "no longer), false takes the tag off. Its text, id and score stay the same."
        ),
        annotations=hints("Mark outdated", idempotent=True),
    )
    @readable_errors
    async def card_mark(
        memory_id: Annotated[str, Field(description="The memory to mark.")],
        outdated: Annotated[bool, Field(description="True to mark it outdated, false to take the mark off.")],
    ) -> UpdateResult:
        # The mark is put on the tags as they are when the memory is written (not as read here first):
        # a change made meanwhile is kept (`MemoryEngine.update`).
        return await engine.update(UpdateRequest(memory_id), outdated=outdated)

    return apps


def declares_apps(extensions: object) -> bool:
    """Whether a client's `capabilities.extensions` (as sent) name the extension with the view's MIME type."""
    settings = extensions.get(EXTENSION_ID) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def caller_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The authorization's client id over HTTP ("" without one: no auth, stdio) and the request's
    User-Agent: two hosts behind one key (or none, on the owner's own machine) are told apart, and
    the server's own handshake recording, which sends none, is no host's."""
    if not isinstance(ctx.request, Request):
        return ""
    user = ctx.request.scope.get("user")
    client = user.access_token.client_id if isinstance(user, AuthenticatedUser) else ""
    return f"{client} {ctx.request.headers.get('user-agent', '')}"


class CardGate:
    """Middleware (`mcp.server.context.ServerMiddleware`) that keeps the card from a host without the
    extension: the one place every list and call already passes."""

    def __init__(self, limit: int = MAX_CLIENTS) -> None:
        # What each caller declared at its last `initialize`, for the stateless requests that follow it and
        # carry no capabilities: a caller is its authorization's client (an OAuth client or an API key)
        # and its User-Agent (`caller_of`). The least recent are forgotten.
        self.declared: OrderedDict[str, bool] = OrderedDict()
        self.limit = limit

    def remember(self, caller: str, apps: bool) -> None:
        self.declared[caller] = apps
        self.declared.move_to_end(caller)
        while len(self.declared) > self.limit:
            self.declared.popitem(last=False)

    def supports_apps(self, ctx: ServerRequestContext[Any, Any]) -> bool | None:
        """True or False when the request's connection or envelope says, or its caller's last
        initialize did; None when nothing is known."""
        capabilities = ctx.session.client_capabilities
        if capabilities is not None:
            return declares_apps(capabilities.extensions)
        return self.declared.get(caller_of(ctx))

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method == "initialize":
            capabilities = params.get("capabilities")
            declared = isinstance(capabilities, dict) and declares_apps(capabilities.get("extensions"))
            self.remember(caller_of(ctx), declared)
            answer = await call_next(ctx)
            return answer if declared else _without_extension(answer)
        apps = self.supports_apps(ctx)
        if ctx.method == "server/discover" and apps is False:
            return _without_extension(await call_next(ctx))
        if ctx.method == "tools/call" and params.get("name") in VIEW_ONLY and apps is not True:
            # What the SDK answers for a tool it does not have: the client never saw this one listed.
            # A caller not known to have the extension (no initialize seen: one forgotten, or since
            # a restart) is refused too, with what would let a host with it in.
            unknown = f"Unknown tool: {params.get('name')}"
            if apps is None:
                unknown += f". A host showing the memory card: connect again ({UNKNOWN_CALLER})."
            return CallToolResult(content=[TextContent(type="text", text=unknown)], is_error=True)
        result = await call_next(ctx)
        if ctx.method not in ("tools/list", "resources/list") or apps:
            return result
        listed = (
            result.model_dump(mode="json", by_alias=True, exclude_none=True)
            if isinstance(result, BaseModel)
            else result
        )
        if not isinstance(listed, dict):
            return result
        if ctx.method == "resources/list":
            return {**listed, "resources": [r for r in listed.get("resources", []) if not r["uri"].startswith("ui://")]}
        tools = [tool for tool in listed.get("tools", []) if tool["name"] not in VIEW_ONLY]
        if apps is False:  # unknown (None): the view stays named, as a host without the extension ignores _meta
            tools = [_without_view(tool) for tool in tools]
        return {**listed, "tools": tools}


def _without_extension(answer: HandlerResult) -> HandlerResult:
    """An initialize or discover answer without the extension among the server's capabilities."""
    data = answer.model_dump(mode="json", by_alias=True, exclude_none=True) if isinstance(answer, BaseModel) else answer
    capabilities = data.get("capabilities") if isinstance(data, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    if not isinstance(data, dict) or not isinstance(capabilities, dict) or not isinstance(extensions, dict):
        return answer
    rest = {key: value for key, value in extensions.items() if key != EXTENSION_ID}
    kept = {key: value for key, value in capabilities.items() if key != "extensions"}
    return {**data, "capabilities": {**kept, "extensions": rest} if rest else kept}


def _without_view(tool: dict[str, Any]) -> dict[str, Any]:
    meta = {key: value for key, value in tool.get("_meta", {}).items() if key != "ui"}
    bare = {key: value for key, value in tool.items() if key != "_meta"}
    return {**bare, "_meta": meta} if meta else bare
