"""The topic questions' vectors are read from beside the model instead of embedded at every start."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from symbiote.fastboot import warm_vectors
from symbiote.embedding.model import MANIFEST_NAME, load_embedder, load_warm
from symbiote.retrieval.topics import TopicIndex


@pytest.fixture
def own_model_dir(tmp_path: Path, model_dir: Path) -> Path:
    """The real model, in a directory of its own (the files linked, the manifest copied)."""
    mine = tmp_path / "model"
    mine.mkdir()
    for source in model_dir.iterdir():
        if source.name == MANIFEST_NAME:
            (mine / source.name).write_text(source.read_text())
        elif source.name != warm_vectors.FILE_NAME:
            (mine / source.name).symlink_to(source)
    return mine


def test_a_start_stores_the_vectors_and_the_next_reads_them(own_model_dir: Path) -> None:
    questions = TopicIndex.questions()
    first = load_warm(own_model_dir, questions)
    assert (own_model_dir / warm_vectors.FILE_NAME).is_file()
    fresh = load_embedder(own_model_dir).embed(questions[:5])
    assert np.allclose(np.stack([first.vectors[q] for q in questions[:5]]), fresh, atol=1e-6)
    # Proof the next start reads instead of embedding: a stand-in stored for one question comes back.
    stand_in = fresh[4]
    warm_vectors.write(own_model_dir, {**first.vectors, questions[0]: stand_in})
    second = load_warm(own_model_dir, questions)
    assert np.array_equal(second.vectors[questions[0]], stand_in)
    assert list(second.vectors) == list(dict.fromkeys(questions))


def test_texts_the_file_lacks_are_embedded_and_added(own_model_dir: Path) -> None:
    load_warm(own_model_dir, ["where do I live?"])
    both = load_warm(own_model_dir, ["where do I live?", "what are my hobbies?"])
    stored = warm_vectors.read(own_model_dir, ["where do I live?", "what are my hobbies?"])
    assert set(stored) == {"where do I live?", "what are my hobbies?"}
    assert np.allclose(stored["what are my hobbies?"], both.vectors["what are my hobbies?"], atol=1e-6)


def test_vectors_of_another_model_are_not_used(own_model_dir: Path) -> None:
    text = "what are my hobbies?"
    real = load_warm(own_model_dir, [text]).vectors[text]
    warm_vectors.write(own_model_dir, {text: -real})
    manifest = json.loads((own_model_dir / MANIFEST_NAME).read_text())
    manifest["source_sha256"] = "0" * 64  # other weights exported into the same directory
    (own_model_dir / MANIFEST_NAME).write_text(json.dumps(manifest))
    again = load_warm(own_model_dir, [text]).vectors[text]
    assert np.allclose(again, real, atol=1e-6)
    assert np.allclose(warm_vectors.read(own_model_dir, [text])[text], real, atol=1e-6)  # rewritten for it


@pytest.mark.parametrize("damage", [b"", b"not a numpy archive", None])
def test_a_damaged_file_is_ignored_and_replaced(own_model_dir: Path, damage: bytes | None) -> None:
    text = "where do I live?"
    path = own_model_dir / warm_vectors.FILE_NAME
    if damage is None:  # a directory where the file should be: nothing can be read or written
        path.mkdir()
    else:
        path.write_bytes(damage)
    got = load_warm(own_model_dir, [text]).vectors[text]
    assert np.allclose(got, load_embedder(own_model_dir).embed([text])[0], atol=1e-6)
    if damage is not None:
        assert text in warm_vectors.read(own_model_dir, [text])
