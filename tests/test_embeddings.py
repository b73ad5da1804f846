"""The ONNX embedder reproduces sentence-transformers, and long text is covered by windows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from symbiote.embedding.model import MODEL_DIMENSION, OnnxEmbedder
from symbiote.embedding.export import bundled_weights_dir

TEXTS = [
    "I love building web apps with React",
    "frontend development preferences",
    "what am I building?",
    "I'm working on a React app with TypeScript and authentication",
    "Ünïcödé, emoji 🚀 and punctuation!?",
    "x",
    "The quarterly report is due on March 3rd; Sarah reviews it. " * 40,  # past the 256-token window
]


@pytest.fixture(scope="module")
def onnx(model_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder(model_dir)


def test_matches_sentence_transformers(onnx: OnnxEmbedder) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(bundled_weights_dir()), device="cpu").encode(
        TEXTS, normalize_embeddings=True
    )
    ours = onnx.embed(TEXTS)
    assert ours.shape == (len(TEXTS), MODEL_DIMENSION)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_vectors_are_normalised_and_batch_independent(onnx: OnnxEmbedder) -> None:
    batch = onnx.embed(TEXTS)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    alone = onnx.embed([TEXTS[0]])[0]
    assert float(alone @ batch[0]) > 0.9999  # padding in a batch does not change a text's vector


def test_short_text_is_one_window(onnx: OnnxEmbedder) -> None:
    assert onnx.windows(TEXTS[0]) == [TEXTS[0]]


def test_long_text_windows_cover_the_end(onnx: OnnxEmbedder) -> None:
    text = "Opening paragraph about gardening. " * 60 + "Final paragraph: the boat is named Persephone."
    windows = onnx.windows(text)
    assert windows[0] == text  # the whole text first: its vector is what sentence-transformers gives
    assert len(windows) >= 4
    assert windows[-1].endswith("named Persephone.")
    assert all(w in text for w in windows)
    covered = "".join(windows[1:])
    assert "Final paragraph" in covered
