"""The embedder as the event loop sees it: async, cached, one worker thread.

Embedding is CPU-bound, so it runs on a single dedicated thread, one job at a time (the
model spreads each job over the cores it may use, `symbiote.embedding.model`): jobs never
pile up on the cores the event loop needs to answer other clients. Repeated texts (the same
query asked twice, content stored again) come from an LRU cache without touching the model.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from symbiote.embedding.model import Embedder, Passages, WarmModel
from symbiote.telemetry.stages import stage
from symbiote.workers import PriorityExecutor, lane

if TYPE_CHECKING:  # numpy is imported when first needed: it is not on the way to `initialize`
    import numpy as np

# Texts embedded per trip to the worker: small enough that a query waiting behind a large
# batch waits for one slice, not the whole batch.
_SLICE = 16
_IDLE_SLICE = 4  # idle work is not interrupted: a write arriving behind it waits for one short slice


class AsyncEmbedder:
    """Wraps a blocking `Embedder` for asyncio callers."""

    def __init__(self, load: Callable[[], Embedder | WarmModel], cache_size: int = 2048) -> None:
        """`load` may return a `WarmModel`: its vectors go into the cache."""
        self._load = load
        self._model: Embedder | None = None
        self._executor = PriorityExecutor(1, "embed")
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._loading: asyncio.Future[Embedder | WarmModel] | None = None

    async def model(self) -> Embedder:
        """Load the model once (in the worker thread), however many callers ask at once."""
        if self._model is not None:
            return self._model
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._executor.run("urgent", self._load))
        try:
            loaded = await asyncio.shield(self._loading)
        except BaseException:
            self._loading = None  # let the next call try again (e.g. after the model is installed)
            raise
        if self._model is None:
            if isinstance(loaded, WarmModel):
                for text, vector in loaded.vectors.items():
                    self._remember(text, vector)
                loaded = loaded.model
            self._model = loaded
        return self._model

    async def embed(self, texts: Sequence[str], urgent: bool = False, idle: bool = False) -> np.ndarray:
        """Vectors for `texts`, in order; cached texts skip the model.

        `urgent` (a query someone waits on) goes before queued background slices (a batch being stored);
        `idle` work (passages of stored memories) goes only when nothing else waits, one small slice at a time.
        Under a request's recorded span (`symbiote.telemetry`) it is the `embedding` span; otherwise
        no span is made at all (the OpenTelemetry API only: nothing to pay without an exporter).
        """
        with stage("embedding", **{"symbiote.embedding.texts": len(texts)}):
            return await self._embed(texts, urgent, idle)

    async def _embed(self, texts: Sequence[str], urgent: bool, idle: bool = False) -> np.ndarray:
        model = await self.model()
        import numpy as np  # loaded with the model (runtime.load_embedder), never raced here

        found: dict[str, np.ndarray] = {}
        for text in dict.fromkeys(texts):
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                found[text] = hit
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        size = _IDLE_SLICE if idle else _SLICE
        if idle:  # passages of many memories: slices of similar length pad less
            missing.sort(key=len)
        for start in range(0, len(missing), size):
            part = missing[start : start + size]
            vectors = await self._executor.run(lane(urgent, idle), model.embed, part)
            for text, vector in zip(part, vectors):
                found[text] = vector
                if not idle:  # passages are embedded once: they would only push queries out of the cache
                    self._remember(text, vector)
        if not texts:
            return np.zeros((0, model.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts])

    async def windows(self, text: str) -> list[str]:
        model = await self.model()
        return await self._executor.run("background", model.windows, text)

    async def passages(self, texts: Sequence[str], complete: bool = False, idle: bool = False) -> list[Passages]:
        """Each text's passages and their vectors, one run of the model per slice of texts
        (`Embedder.embed_passages`): all the model work storing waits for (an `embedding` span).
        A long text gets its whole vector only, its paragraphs and spans being indexed after the
        store (`symbiote.memory.passage_indexing`); with `complete`, they are embedded here too."""
        with stage("embedding", **{"symbiote.embedding.texts": len(texts)}):
            return await self._passages(texts, complete, idle)

    async def _passages(self, texts: Sequence[str], complete: bool, idle: bool) -> list[Passages]:
        model = await self.model()
        import numpy as np

        made: list[Passages] = []
        size = _IDLE_SLICE if idle else _SLICE
        for start in range(0, len(texts), size):
            made += await self._executor.run(lane(idle=idle), model.embed_passages, texts[start : start + size])
        if not idle:  # passages are embedded once: they would only push queries out of the cache
            for passages in made:
                self._remember(passages.windows[0], passages.vectors[0])
        if complete:
            for row, passages in enumerate(made):
                if not passages.complete:
                    rest = await self._embed(passages.windows[1:], urgent=False, idle=idle)
                    made[row] = Passages(passages.windows, np.concatenate([passages.vectors, rest]))
        return made

    def _remember(self, text: str, vector: np.ndarray) -> None:
        if self._cache_size <= 0:
            return
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def close(self) -> None:
        """Drop queued work and wait for the slice or model load in progress: onnxruntime aborts
        the process if the interpreter shuts down while a session is being created. Then let go of
        the model and the cache: a closed engine sits in reference cycles until a full collection, and
        its onnxruntime session (some 70 MB) stayed with it."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._model, self._loading = None, None
        self._cache.clear()
