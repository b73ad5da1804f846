"""Wires one Symbiote instance together from settings: personality, model, store, engine, MCP server."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from symbiote.config import Settings
from symbiote.embedder import AsyncEmbedder
from symbiote.embeddings import MANIFEST_NAME, Embedder, ModelMissingError, OnnxEmbedder
from symbiote.engine import MemoryEngine
from symbiote.personality import Personality, load
from symbiote.server import SymbioteMCP, build_server
from symbiote.storage import MemoryStore, open_embedded_store

log = logging.getLogger(__name__)


def load_embedder(model_dir: Path) -> Embedder:
    """The exported ONNX model; exported on the spot if missing and the build tools are installed."""
    if not (model_dir / MANIFEST_NAME).is_file():
        try:
            from symbiote.model_export import export_model
        except ImportError:
            raise ModelMissingError(
                f"No exported embedding model in {model_dir}. Run scripts/setup.sh or `symbiote export-model`."
            ) from None
        log.warning("no exported model in %s; exporting it now (one time, about 10 s)", model_dir)
        try:
            export_model(model_dir)
        except ImportError as exc:
            raise ModelMissingError(
                f"No exported embedding model in {model_dir}, and the export tools are not installed ({exc}). "
                "Run scripts/setup.sh, or set SYMBIOTE_MODEL_DIR to an exported model."
            ) from None
    return OnnxEmbedder(model_dir)


@dataclass
class Runtime:
    settings: Settings
    personality: Personality
    engine: MemoryEngine
    server: SymbioteMCP
    started: float = field(default_factory=time.monotonic)

    @property
    def uptime_seconds(self) -> float:
        return round(time.monotonic() - self.started, 1)


def build_runtime(settings: Settings) -> Runtime:
    personality = load(settings.personalities_dir, settings.personality)

    def open_store(model: str, dimension: int) -> MemoryStore:
        return open_embedded_store(settings.chromadb_path, model, dimension)

    embedder = AsyncEmbedder(lambda: load_embedder(settings.model_dir), cache_size=settings.embed_cache_size)
    engine = MemoryEngine(embedder, open_store)
    log.info(
        "symbiote configured: personality=%s store=%s model=%s",
        personality.variant,
        settings.chromadb_path,
        settings.model_dir,
    )
    return Runtime(settings, personality, engine, build_server(engine, personality))
