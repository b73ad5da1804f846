"""Vectors of texts every start embeds (the topic questions), kept beside the model.

Every search first matches the query against the topics' questions (`symbiote.retrieval.topics`), so a
start embeds those 44 texts before its first answer: about 0.18 s of CPU, spent while the
server imports the MCP SDK and the store process imports Chroma on the machine's two cores
(first search over HTTP 0.1-0.2 s sooner without it, measured interleaved). They are the same
every time for the same model, so `symbiote export-model` writes them to `warm-vectors.npz` in
the model directory, and a start that finds the file missing or stale writes it when it can.

The file names the model it was made with (the weights' SHA-256 from the manifest) and the
texts; a vector is used only for exactly its text and only with that model. Anything wrong
with the file (missing, unreadable, another model) means the texts are embedded as before.
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from symbiote.fastboot import cache_files
from symbiote.embedding import MANIFEST_NAME

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

FILE_NAME = "warm-vectors.npz"


def model_id(model_dir: Path) -> str | None:
    """The weights' identity from the model's manifest; None if there is none to trust."""
    try:
        manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
        return f"{manifest['model']} {manifest['source_sha256']}"
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read(model_dir: Path, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored vectors of those of `texts` the file has, for this model; {} if none."""
    import numpy as np

    wanted = model_id(model_dir)
    if wanted is None:
        return {}
    try:
        with np.load(model_dir / FILE_NAME, allow_pickle=False) as stored:
            if str(stored["model"]) != wanted:
                return {}
            by_text = dict(zip(stored["texts"].tolist(), stored["vectors"]))
    except (OSError, ValueError, KeyError, EOFError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.debug("%s not used (%s)", model_dir / FILE_NAME, exc)
        return {}
    return {text: by_text[text] for text in texts if text in by_text}


def write(model_dir: Path, vectors: Mapping[str, np.ndarray]) -> bool:
    """Store `vectors` for this model, atomically; False where the directory is read-only."""
    import numpy as np

    identity = model_id(model_dir)
    if identity is None or not vectors:
        return False
    out = io.BytesIO()
    np.savez(
        out,
        model=np.array(identity),
        texts=np.array(list(vectors)),
        vectors=np.stack([np.asarray(v, dtype=np.float32) for v in vectors.values()]),
    )
    return cache_files.write_atomically(model_dir / FILE_NAME, out.getvalue())
