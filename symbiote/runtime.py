"""Wires one Symbiote instance together from settings: personality, model, store, engine, MCP server,
and, when SYMBIOTE_SHARE is set, the file share's writer lease and snapshots."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from symbiote.azure import FileShare, LeaseGuard, ShareServices, open_share_services
from symbiote.config import Settings
from symbiote.embedding import model as embeddings
from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.embedding.model import Embedder, WarmModel
from symbiote.mcp import (
    HistoryServices,
    Personality,
    SymbioteMCP,
    build_server,
    load_personality,
    register_history_tools,
)
from symbiote.memory import ContextBuilder, ConversationHistory, EnginePolicy, MemoryEngine, TokenCounter
from symbiote.storage import DiskSpace, HistoryStore, Local, MemoryStore, Reach, ResetGuard
from symbiote.storage.chroma import (
    ChromaClients,
    ChromaServer,
    StoreProcess,
    for_path,
    open_embedded_store,
    open_history_store,
    open_server_store,
)
from symbiote.telemetry import export as telemetry

log = logging.getLogger(__name__)


ModelLoader = Callable[[], Embedder | WarmModel]  # called once, in the embedder's thread, on first use


def load_embedder(model_dir: Path) -> Embedder | WarmModel:
    """The model, with the topic questions' and the background's vectors (every search needs them)."""
    from symbiote.retrieval import TopicIndex, cohort

    return embeddings.load_warm(model_dir, [*TopicIndex.questions(), *cohort.texts()])


def store_process(settings: Settings) -> StoreProcess | None:
    """The store process (the embedded store's own), when that is how the store runs."""
    if settings.chroma_host or not settings.store_process:
        return None
    return for_path(settings.chromadb_path)


def disk_space(settings: Settings) -> DiskSpace:
    """The data disk's reserve; also for a Chroma server, whose keyword index is in CHROMADB_PATH."""
    return DiskSpace(settings.chromadb_path, settings.min_free_mb * 1024 * 1024)


def engine_policy(settings: Settings) -> EnginePolicy:
    return EnginePolicy(
        max_memories=settings.max_memories,
        retention_days=settings.retention_days,
        confidence_min=settings.memory_confidence_min,
        max_per_window=settings.memory_max_per_window,
        max_content_bytes=settings.max_content_bytes,
    )


@dataclass
class Runtime:
    settings: Settings
    personality: Personality
    engine: MemoryEngine
    server: SymbioteMCP
    started: float = field(default_factory=time.monotonic)
    history: HistoryServices | None = None
    store_process: StoreProcess | None = None  # the embedded Chroma's own process, if that is how the store runs
    share: ShareServices | None = None  # the file share's lease, write gate and snapshots (SYMBIOTE_SHARE)

    @property
    def uptime_seconds(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def close_stores(self) -> None:
        """Close the conversation history and the engine, with their threads, stores and the store
        process: each is closed even if another fails (the first failure is raised after)."""
        with contextlib.ExitStack() as closing:
            closing.callback(self.engine.close)  # last: it ends the store process the history uses too
            if self.history is not None:
                closing.callback(self.history.history.close)

    def close(self) -> None:
        """Close the stores, then release the writer lease so the next instance need not wait for it to go stale."""
        with contextlib.ExitStack() as closing:
            if self.share is not None:
                closing.callback(self.share.close)
            closing.callback(self.close_stores)


def history_services(
    settings: Settings,
    embedder: AsyncEmbedder,
    engine: MemoryEngine,
    clients: ChromaClients | None = None,
    guard: Callable[[Callable[[], Reach[HistoryStore]]], Reach[HistoryStore]] | None = None,
    process: StoreProcess | None = None,
) -> HistoryServices:
    """Conversation history and build_context, in the same Chroma as the memories.

    `guard` wraps the history store's opener the way the memory store's is wrapped, e.g. in
    `symbiote.azure.guard.LeaseGuard` so that history writes too need the file share's writer lease.
    With `process` (embedded Chroma) the history store lives in the store process.
    """
    clients = clients or ChromaClients(ChromaServer.from_settings(settings), settings.chromadb_path)

    def open_history(model: str, dimension: int) -> Reach[HistoryStore]:
        def opener() -> Reach[HistoryStore]:
            if process is not None:
                return process.history(model, dimension)
            return Local(open_history_store(clients.get(), model, dimension))

        return guard(opener) if guard is not None else opener()

    history = ConversationHistory(embedder, open_history, disk_space(settings), on_close=clients.close)
    builder = ContextBuilder(
        history,
        engine,
        TokenCounter(settings.model_dir / "tokenizer.json"),
        tail_n=settings.history_tail_n,
        top_k=settings.memory_top_k,
        budget=settings.context_token_budget,
    )
    return HistoryServices(history, builder)


MemoryGuard = Callable[[Callable[[], Reach[MemoryStore]]], Reach[MemoryStore]]
HistoryGuard = Callable[[Callable[[], Reach[HistoryStore]]], Reach[HistoryStore]]


def _guards(settings: Settings, services: ShareServices | None) -> tuple[MemoryGuard, HistoryGuard]:
    """How each store's opener is wrapped: the reset check always (a reset under us is noticed);
    on a file share, writes need the writer lease and wait for a snapshot in progress."""
    path = settings.chromadb_path
    if services is None:
        return (lambda opener: ResetGuard(opener(), path)), (lambda opener: ResetGuard(opener(), path))
    lease, gate = services.lease, services.gate
    return (
        lambda opener: ResetGuard(LeaseGuard(opener, lease, gate, path), path),
        lambda opener: ResetGuard(LeaseGuard(opener, lease, gate, path), path),
    )


def build_runtime(
    settings: Settings, *, share: FileShare | None = None, load_model: ModelLoader | None = None
) -> Runtime:
    """The whole instance. With SYMBIOTE_SHARE set (or `share` given, as tests do) the file share's
    services open too: the writer lease is taken or waited for, and both stores write behind it.
    Telemetry starts first (once per process), so the instance's first spans and lines are sent.
    `load_model` gives the model where one loaded model serves several instances (it is immutable:
    the tests share one); by default each instance loads its own from `settings.model_dir`."""
    telemetry.start()
    personality = load_personality(settings.personalities_dir, settings.personality)
    chroma_server = ChromaServer.from_settings(settings)

    # Embedded Chroma runs in a process of its own (symbiote.storage.chroma.process) unless
    # SYMBIOTE_STORE_PROCESS=off; a Chroma server is one already.
    process = store_process(settings)
    services = open_share_services(settings, share)
    guard, history_guard = _guards(settings, services)

    def open_memories(model: str, dimension: int) -> Reach[MemoryStore]:
        def opener() -> Reach[MemoryStore]:
            if process is not None:
                return process.memories(model, dimension)
            if chroma_server is not None:
                sync = settings.chroma_keyword_sync_seconds
                return Local(open_server_store(chroma_server, settings.chromadb_path, model, dimension, sync))
            return Local(open_embedded_store(settings.chromadb_path, model, dimension))

        return guard(opener)

    embedder = AsyncEmbedder(
        load_model or (lambda: load_embedder(settings.model_dir)), cache_size=settings.embed_cache_size
    )
    engine = MemoryEngine(
        embedder,
        open_memories,
        engine_policy(settings),
        disk_space(settings),
        on_close=process.close if process else None,
        # The warm-up opens the store, creating it from the copy made ahead if there is none. On a file
        # share the guard decides: the writer opens (or creates) it, a standby never creates it.
        share_usage=services.usage_report if services is not None else None,
        word_table=settings.model_dir,
    )
    history = history_services(
        settings,
        embedder,
        engine,
        ChromaClients(chroma_server, settings.chromadb_path),
        guard=history_guard,
        process=process,
    )
    server = build_server(engine, personality, trace_content=settings.trace_content)
    register_history_tools(server, history)
    log.info(
        "symbiote configured: personality=%s store=%s model=%s",
        personality.variant,
        chroma_server.describe() if chroma_server else settings.chromadb_path,
        settings.model_dir,
    )
    if services is not None:
        log.info(
            "file share: %s (%s), writer=%s",
            services.share.kind,
            services.share.location,
            "yes" if services.lease.held else "standby",
        )
    return Runtime(settings, personality, engine, server, history=history, store_process=process, share=services)
