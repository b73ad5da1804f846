"""The legacy HTTP+SSE transport (MCP 2024-11-05), with a session table, heartbeats and a lifetime.

- `GET /sse` opens a stream. Its first event is `event: endpoint` whose data is the path to post
  to, `/messages/{session_id}`; every server message then arrives as `event: message`.
- `POST /messages/{session_id}` (also the SDK's `/messages/?session_id=...`) takes one JSON-RPC
  message: 202 when accepted (the answer comes on the stream), 404 for an unknown or closed
  session (or one opened with another credential), 400 for a body that is not JSON-RPC.
- Session ids are 128 random bits from `secrets`. A session exists from connect to disconnect:
  `SessionTable` holds it, and both ends are logged (with a short prefix of the id only).
- A heartbeat (an SSE comment, `: ping ...`) goes out every `heartbeat_seconds` (default 30): it
  keeps proxies from closing an idle stream, and a write to a vanished client fails, so a dead
  connection is noticed within one interval even when no disconnect was seen.
- After `max_lifetime_seconds` (default one hour) the server ends the stream; clients reconnect
  and get a new session. Nothing per-client outlives its stream.

The SDK's `SseServerTransport` does the first half of this with a query-string endpoint and no
lifetime; this module keeps its message handling (context streams, `ServerMessageMetadata`, the
credential check) and adds the rest.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared._context_streams import ContextSendStream, create_context_streams
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from symbiote.http import envelope

log = logging.getLogger("symbiote.sessions")

SESSION_ID_BYTES = 16  # 128 bits


def new_session_id() -> str:
    return secrets.token_hex(SESSION_ID_BYTES)


def _short(session_id: str) -> str:
    """Enough of an id to follow one session through the log, too little to post to it."""
    return session_id[:8]


@dataclass(eq=False)
class Session:
    id: str
    writer: ContextSendStream[SessionMessage | Exception]
    owner: AuthorizationContext | None
    peer: str
    transport: str = "sse"
    opened: float = field(default_factory=time.monotonic)


class SessionTable:
    """The open sessions, by id. Everything that opens one closes it (idempotently)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self.opened_total = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def open(self, session: Session) -> None:
        self._sessions[session.id] = session
        self.opened_total += 1
        log.info(
            "session %s opened (%s, client %s); %d active",
            _short(session.id),
            session.transport,
            session.peer,
            len(self),
        )

    def close(self, session: Session, reason: str) -> None:
        if self._sessions.get(session.id) is not session:
            return
        del self._sessions[session.id]
        log.info(
            "session %s closed (%s) after %.1f s; %d active",
            _short(session.id),
            reason,
            time.monotonic() - session.opened,
            len(self),
        )


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"


class _Asgi:
    """A plain ASGI callable for a Starlette Route (a function endpoint would be wrapped as request/response)."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


class LegacySseTransport:
    """`GET /sse` and `POST /messages/{session_id}` for one low-level MCP server."""

    def __init__(
        self,
        server: Any,
        *,
        security: TransportSecuritySettings,
        sessions: SessionTable,
        heartbeat_seconds: float = 30.0,
        max_lifetime_seconds: float = 3600.0,
        sse_path: str = "/sse",
        message_path: str = "/messages/",
    ) -> None:
        self.server = server  # mcp.server.lowlevel.Server
        self.sessions = sessions
        self.heartbeat_seconds = heartbeat_seconds
        self.max_lifetime_seconds = max_lifetime_seconds
        self.sse_path = sse_path
        self.message_path = message_path if message_path.endswith("/") else message_path + "/"
        self._security = TransportSecurityMiddleware(security)

    def routes(self) -> list[BaseRoute]:
        post = _Asgi(self.handle_post)
        return [
            Route(self.sse_path, endpoint=_Asgi(self.handle_sse), methods=["GET"]),
            Route(self.message_path + "{session_id}", endpoint=post, methods=["POST"]),
            Route(self.message_path, endpoint=post, methods=["POST"]),  # the SDK's ?session_id= form
        ]

    async def handle_sse(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        refused = await self._security.validate_request(request, is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        read_stream_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_stream_reader = create_context_streams[SessionMessage](0)
        user = scope.get("user")
        owner = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        session = Session(new_session_id(), read_stream_writer, owner, _peer(scope))
        endpoint = scope.get("root_path", "").rstrip("/") + self.message_path + session.id
        events_in, events_out = anyio.create_memory_object_stream[dict[str, Any]](0)
        reason = ["client disconnected"]

        async def sse_writer() -> None:
            async with events_in, write_stream_reader:
                await events_in.send({"event": "endpoint", "data": endpoint})
                with anyio.move_on_after(self.max_lifetime_seconds) as lifetime:
                    async for message in write_stream_reader:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await events_in.send({"event": "message", "data": data})
                if lifetime.cancelled_caught:
                    reason[0] = f"maximum lifetime of {self.max_lifetime_seconds:g} s reached; the client reconnects"
                else:
                    reason[0] = "server closed the session"
                # Out of the table before the stream ends: a client that posts the moment it sees
                # the end must get 404, not a 202 for a session that is going away.
                self.sessions.close(session, reason[0])

        response_state = {"started": False, "complete": False}

        async def tracked_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                response_state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                response_state["complete"] = True
            await send(message)

        async def stream() -> None:
            try:
                await EventSourceResponse(
                    content=events_out,
                    data_sender_callable=sse_writer,
                    ping=self.heartbeat_seconds,
                    send_timeout=max(self.heartbeat_seconds, 1.0),
                    headers={"Cache-Control": "no-store"},
                )(scope, receive, tracked_send)
            except Exception as exc:  # noqa: BLE001 - a failed write (heartbeat included) means the client is gone
                reason[0] = f"write failed: {type(exc).__name__}"
            finally:
                if response_state["started"] and not response_state["complete"]:
                    # Ended without the stream's last chunk (server shutting down): send it, so the
                    # client sees a clean end of stream and reconnects, and nothing is logged as broken.
                    with anyio.CancelScope(shield=True):
                        try:
                            await send({"type": "http.response.body", "body": b"", "more_body": False})
                        except Exception as exc:  # noqa: BLE001 - the client already left: nothing to end, nothing broken
                            log.debug("session %s: end of stream not sent (%s)", _short(session.id), type(exc).__name__)
                self.sessions.close(session, reason[0])
                await read_stream_writer.aclose()
                await write_stream_reader.aclose()
                await events_out.aclose()

        self.sessions.open(session)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stream)
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())
                # The server stops when the stream ends (its read side closes); if it stopped on its
                # own, end the stream too.
                tasks.cancel_scope.cancel()
        finally:
            self.sessions.close(session, reason[0])

    async def handle_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        refused = await self._security.validate_request(request, is_post=True)
        if refused is not None:
            await refused(scope, receive, send)
            return
        session_id = scope.get("path_params", {}).get("session_id") or request.query_params.get("session_id")
        if not session_id:
            await _error(400, "session_id is required: post to the endpoint the /sse stream announced")(
                scope, receive, send
            )
            return
        session = self.sessions.get(session_id.replace("-", "").lower())
        user = scope.get("user")
        requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        if session is None or requestor != session.owner:
            # Another credential's session is answered exactly like a missing one.
            await _error(404, "Unknown or closed session: open a new one with GET /sse")(scope, receive, send)
            return
        body = await request.body()
        refusal = envelope.refused(body)  # text that is not Unicode, an id that cannot be one: as /mcp answers them
        if refusal is not None:
            log.info("session %s: JSON-RPC message refused (400)", _short(session.id))
            await refusal(scope, receive, send)
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(body, by_name=False)
        except ValidationError:
            log.info("session %s: malformed JSON-RPC message refused (400)", _short(session.id))
            await _error(400, "The body is not a JSON-RPC 2.0 message")(scope, receive, send)
            return
        await Response("Accepted", status_code=202)(scope, receive, send)
        try:
            await session.writer.send(SessionMessage(message, metadata=ServerMessageMetadata(request_context=request)))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.info("session %s closed before its message was read", _short(session.id))


def _error(status: int, text: str) -> Response:
    return JSONResponse({"error": text}, status_code=status)
