"""The MCP server: Venom's tools, prompt and resources over the memory engine.

Transport-agnostic: `symbiote stdio` runs it over stdin/stdout; `symbiote.http.app` puts it behind
HTTP. Many clients never load prompts, so the memory protocol also rides in `instructions`,
which every client receives at initialize.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from types import CodeType, FunctionType
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, GetPromptResult, Icon, InputRequiredResult, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from symbiote import __version__
from symbiote.errors import SymbioteError
from symbiote.mcp.memory_card import VIEW_META, CardGate, card_extension
from symbiote.mcp.personality import Personality
from symbiote.mcp.replies import fitted
from symbiote.mcp.tools import register_tools
from symbiote.memory import MemoryEngine
from symbiote.telemetry.gauges import StoreGauges
from symbiote.telemetry.mcp_spans import McpTelemetry, instrument

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Symbiote is the user's single long-term memory, shared by every assistant they use.
Memory protocol, in order:
1. Before answering any message, call search_memory with the subject the message is about.
2. Its results, then below_cutoff, are the candidates, best first, each with the server's own
   chance that it is relevant; "answer" marks the ones the server is sure of.
   Use any that plainly answers the question as asked, whatever its score or mark; say something was
   never stored only when none of them does. Use it naturally, as shared knowledge; never say "I found
   in memory" or quote ids.
3. When the user reveals something that will matter later (preference, project, decision and
   its reason, person, date, goal), call store_memory in the same turn, unasked: one clear,
   self-contained sentence, a few short tags. Never store secrets.
4. When a fact changes (a new city, job, coach, dose, plan), search for the old one first, then
   store the new fact with replaces=[the old memory's id]: the old one is kept, marked, and shown
   after it. A store result's may_replace lists older memories that may hold an earlier value:
   call link_memories(newer_id, older_id, kind) for each one the new memory really replaces
   (kind "update", or "duplicate" for the same fact said again) and ignore the rest.
5. When asked to forget something, search for it and delete_memory it.
Load the venom_identity prompt for the full persona (Venom: "we", never "I")."""


# Each tool as the SDK builds it from its function (`Tool.from_function`: a pydantic model of the
# arguments and two JSON schemas, most of the time a server takes to build), by the code of the function
# under its wrappers and the tool's name: every runtime in a process defines the same functions over its
# own engine, so a later one takes a copy holding its own function (the test suite builds hundreds).
_BUILT: dict[tuple[CodeType, str], tuple[tuple[Any, ...], Tool]] = {}


def _built(
    fn: Callable[..., Any],
    name: str | None,
    title: str | None,
    description: str | None,
    annotations: ToolAnnotations | None,
    icons: list[Icon] | None,
    meta: dict[str, Any] | None,
    structured_output: bool | None,
) -> Tool:
    """`Tool.from_function(fn, ...)` with the schemas as published (`strict_ready`, `plain_schema`)."""
    inner = inspect.unwrap(fn)
    key = (inner.__code__, name or inner.__name__) if isinstance(inner, FunctionType) else None
    spec = (
        (inner.__defaults__, inner.__kwdefaults__) if isinstance(inner, FunctionType) else (),
        title,
        description,
        annotations,
        icons,
        meta,
        structured_output,
    )
    made = _BUILT.get(key) if key is not None else None
    if made is not None and made[0] == spec:
        return made[1].model_copy(update={"fn": fn})
    tool = Tool.from_function(
        fn,
        name=name,
        title=title,
        description=description,
        annotations=annotations,
        icons=icons,
        meta=meta,
        structured_output=structured_output,
    )
    tool.parameters = strict_ready(tool.parameters)
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = plain_schema(tool.fn_metadata.output_schema)
    if key is not None:  # kept without its function: that holds this runtime's engine, which must go when closed
        _BUILT[key] = (spec, tool.model_copy(update={"fn": _unbound}))
    return tool


def _unbound(*args: Any, **kwargs: Any) -> Any:
    """A kept tool's function: each server's copy holds its own."""
    raise RuntimeError("a kept tool is copied with its own function before it is called")


class SymbioteMCP(MCPServer):
    """MCPServer whose argument errors read like sentences instead of pydantic dumps, and whose
    tools are listed once they can answer promptly."""

    def __init__(self, *args: Any, ready: Callable[[], Awaitable[None]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready = ready

    async def list_tools(self) -> list[MCPTool]:
        """A client lists the tools when it connects, then calls one while its user waits. Right
        after a start the model and the store are still loading: they are waited for here, where
        the client is connecting anyway, not on the first call."""
        if self._ready is not None:
            await self._ready()
        return await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in cause.errors()
                )
                raise ToolError(f"Invalid arguments for {name}: {problems}.") from cause
            raise

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """An unknown prompt, an argument it does not take or one it needs left out is the client's
        mistake: an invalid-params error naming it. The SDK raises a bare ValueError, answered as code 0
        "Error rendering prompt" (or, on the 2026-07-28 path, an internal server error)."""
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")
        declared = {argument.name: argument.required for argument in prompt.arguments or []}
        unexpected = sorted(set(arguments or {}) - set(declared))
        missing = sorted(arg for arg, required in declared.items() if required and arg not in (arguments or {}))
        if unexpected or missing:
            takes = f"it takes {', '.join(sorted(declared))}" if declared else "it takes no arguments"
            problem = f"unexpected {', '.join(unexpected)}" if unexpected else f"missing {', '.join(missing)}"
            raise MCPError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: {problem} ({takes}).")
        return await super().get_prompt(name, arguments, context)

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        """Register a tool (the `@tool` decorator comes here too), publishing its output schema plain.

        `plain_schema` gives the same constraints without `$ref`s, which a client's validator
        resolves for every field of every hit (the official SDK client checks each result in pure
        Python, jsonschema). Results are still validated here against the tool's own model. The
        input schema is published as `strict_ready` makes it, for clients in OpenAI's strict mode.

        Every tool declares its title and all four hints: the Claude and ChatGPT directories refuse a
        tool that leaves one to the client's default."""
        hints = annotations and (
            annotations.read_only_hint,
            annotations.destructive_hint,
            annotations.idempotent_hint,
            annotations.open_world_hint,
        )
        if not title or not hints or None in hints:
            raise ValueError(f"tool {name or fn.__name__}: give it a title and all four hints")
        tool = _built(fn, name, title, description, annotations, icons, meta, structured_output)
        # The SDK takes a built Tool only at construction (`MCPServer(tools=...)`), so one built once
        # goes where the SDK's own `add_tool` puts it, with its rule for a name given twice.
        if self._tool_manager.get_tool(tool.name) is None:
            self._tool_manager._tools[tool.name] = tool
        else:
            log.warning("Tool already exists: %s", tool.name)

    async def run_stdio_streams(self, read_stream: Any, write_stream: Any) -> None:
        """`run_stdio_async` over streams the caller opened (`symbiote.fastboot.stdio_relay` hands the SDK
        pipes instead of the process's stdin and stdout, to answer the handshake while it loads)."""
        await self._lowlevel_server.run(
            read_stream, write_stream, self._lowlevel_server.create_initialization_options()
        )


def strict_ready(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as every client takes it: without pydantic's `title`s (names a model
    reads twice: they are the property names again), and every object that declares no properties
    closed (`additionalProperties: false`), which OpenAI's strict mode needs and cannot assume. An
    object with properties is closed by the strict converters themselves; a client that does not
    convert keeps its leniency. Optional arguments stay `anyOf [X, null]` with default null: in strict
    mode every property is required, so a model passes null for one it leaves out."""

    def ready(node: Any) -> Any:
        if isinstance(node, list):
            return [ready(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: ready(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        if "properties" in out:
            out["properties"] = {name: ready(sub) for name, sub in node["properties"].items()}
        if out.get("type") == "object" and not out.get("properties") and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out

    result: dict[str, Any] = ready(schema)
    return result


def plain_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `$defs` written in place of their `$ref`s (a recursive one is kept as a
    reference). A nullable field stays `anyOf [{type: X}, {type: null}]`: a `type` list is legal but
    a client that maps schemas onto a one-`type` dialect (Gemini's OpenAPI subset) may drop it, and
    the Inspector's `--strict` warns of each."""
    defs = schema.get("$defs", {})

    def plain(node: Any, inside: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [plain(item, inside) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
        if name is not None and name in defs and name not in inside:
            return plain({**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}, inside | {name})
        return {k: plain(v, inside) for k, v in node.items() if k != "$defs"}

    flat: dict[str, Any] = plain(schema, frozenset())
    recursive = {n for n in defs if f'"#/$defs/{n}"' in json.dumps(flat)}
    if recursive:  # references left in place need their definitions
        flat["$defs"] = {n: plain(defs[n], frozenset({n})) for n in recursive}
    return flat


def build_server(engine: MemoryEngine, personality: Personality, *, trace_content: bool = False) -> SymbioteMCP:
    """The server with its tools, prompt and resources, instrumented (`symbiote.telemetry`): one span per
    request and the memory gauges, sent wherever `symbiote.telemetry.export` was told, or nowhere.
    `trace_content` (SYMBIOTE_TRACE_CONTENT) lets tool arguments and results into the spans."""
    server = SymbioteMCP(
        extensions=[card_extension(engine)],
        name="symbiote",
        title="Symbiote memory (Venom)",
        description="One persistent semantic memory shared by every assistant the user talks to.",
        instructions=INSTRUCTIONS,
        version=__version__,
        ready=engine.ready,
    )
    register_tools(server, engine, VIEW_META)
    gauges = StoreGauges(engine)
    instrument(server.middleware, McpTelemetry(content=trace_content, after_tool=gauges.refresh_soon))
    server.middleware.append(CardGate())

    @server.prompt(
        name="venom_identity",
        title="Venom identity",
        description=(
            f"The Venom persona and its memory protocol (variant: {personality.variant}). Load it as the "
            "system prompt: memory search is step 1 of every answer."
        ),
    )
    def venom_identity() -> str:
        return personality.text

    @server.resource(
        "memory://recent",
        name="recent_memories",
        title="Recent memories",
        description="The 20 most recent memories, newest first, as JSON (a long one as its beginning, with "
        "content_chars: get_memory has the whole).",
        mime_type="application/json",
    )
    async def recent_memories() -> str:
        try:
            page = await engine.list_memories(20, None)
        except SymbioteError as exc:
            return json.dumps({"error": str(exc)})
        return fitted(page)[1]  # within a tool reply's budget: 20 memories of 100,000 bytes made 2 MB

    @server.resource(
        "memory://stats",
        name="memory_stats",
        title="Memory statistics",
        description="Counts, top tags, disk usage and latency of the memory store, as JSON.",
        mime_type="application/json",
    )
    async def stats() -> str:
        try:
            result = await engine.stats()
        except SymbioteError as exc:
            return json.dumps({"error": str(exc)})
        return result.model_dump_json(indent=2)

    return server
