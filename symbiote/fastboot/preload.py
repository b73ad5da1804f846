"""Load the embedding model while the server is still importing the MCP SDK.

The first search waits for the model (numpy, onnxruntime, an ONNX session: about 0.4 s here)
and for the topic questions' vectors (44 texts, about 0.17 s), and the warm-up used to start
both only once the app was built. `start` does both at process start in a thread of its own:
the ONNX work runs outside the GIL, so it overlaps the SDK's import instead of following it.
The runtime then `take`s the result (`embeddings.WarmModel`) instead of loading again; a
preload that failed is simply loaded again (and fails again with its message).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from symbiote.config import Settings
    from symbiote.embedding.model import WarmModel

log = logging.getLogger(__name__)

_PRELOADS: dict[Path, Future[WarmModel]] = {}
_LOCK = threading.Lock()


def start(model_dir: Path, texts: Sequence[str] = ()) -> None:
    """Begin loading the model at `model_dir` and embedding `texts`, in a daemon thread (once per
    directory)."""
    key = model_dir.expanduser().resolve()
    with _LOCK:
        if key in _PRELOADS:
            return
        future: Future[WarmModel] = Future()
        _PRELOADS[key] = future

    def run() -> None:
        try:
            # embeddings, not symbiote.runtime: that imports the MCP SDK, which another thread is importing
            from symbiote.embedding.model import load_warm

            future.set_result(load_warm(model_dir, texts))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever takes the model
            future.set_exception(exc)

    threading.Thread(target=run, name="symbiote-model-preload", daemon=True).start()


def start_for(settings: Settings) -> None:
    """`start` for the configured model, with the topic questions (every search matches topics first)."""
    from symbiote.retrieval.topics import TopicIndex

    start(settings.model_dir, TopicIndex.questions())


def take(model_dir: Path) -> WarmModel | None:
    """The preloaded model (waiting for it if still loading), or None if none was started or it
    failed: the caller then loads it itself."""
    with _LOCK:
        future = _PRELOADS.pop(model_dir.expanduser().resolve(), None)
    if future is None:
        return None
    try:
        return future.result()
    except Exception:  # noqa: BLE001 - the caller loads the model itself, and its load reports the reason
        log.debug("the preloaded model failed; loading it again", exc_info=True)
        return None
