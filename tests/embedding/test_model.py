"""The ONNX embedder reproduces sentence-transformers, and long text is covered by windows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from symbiote.embedding.model import MODEL_DIMENSION, OnnxEmbedder

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
    """Against sentence-transformers' vectors of the shipped weights (`tests/fixtures/make_reference_vectors.py`
    makes them; the weights' hash says they are still the ones shipped)."""
    from tests.fixtures.make_reference_vectors import HERE, weights_sha256

    fixture = json.loads((HERE / "reference-vectors.json").read_text())
    assert fixture["weights_sha256"] == weights_sha256() and fixture["texts"] == TEXTS, "run make_reference_vectors.py"
    reference = np.asarray(fixture["vectors"], dtype=np.float32)
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


def test_a_broken_model_directory_fails_the_same_way_through_the_runtime(tmp_path: Path) -> None:
    from symbiote.embedding.model import MANIFEST_NAME, load_embedder
    from symbiote.runtime import load_embedder as runtime_load

    broken = tmp_path / "broken-model"  # a manifest without the model it describes
    broken.mkdir()
    (broken / MANIFEST_NAME).write_text("{}", encoding="utf-8")
    with pytest.raises(Exception) as raised:
        runtime_load(broken)
    with pytest.raises(type(raised.value)):  # the same failure as loading the model alone
        load_embedder(broken)


@pytest.mark.slow
def test_the_runtime_loads_the_model_with_the_topic_questions_and_background_embedded(
    model_dir: Path, tmp_path: Path
) -> None:
    from symbiote.embedding.model import WarmModel
    from symbiote.retrieval import TopicIndex, cohort
    from symbiote.runtime import load_embedder as runtime_load

    beside = tmp_path / "model"  # the model's files, with room for the warm vectors beside them
    beside.mkdir()
    for item in model_dir.iterdir():
        if not item.name.startswith("warm-"):
            (beside / item.name).symlink_to(item)
    warm = runtime_load(beside)
    assert isinstance(warm, WarmModel)
    assert set(warm.vectors) == {*TopicIndex.questions(), *cohort.texts()}
    question = next(iter(warm.vectors))
    assert np.allclose(warm.vectors[question], warm.model.embed([question])[0], atol=1e-6)

    # The next start reads the vectors kept beside the model instead of embedding them again.
    (kept,) = beside.glob("warm-*.npy")
    planted = np.load(kept)
    planted[0] = -planted[0]
    np.save(kept, planted)
    again = runtime_load(beside)
    assert isinstance(again, WarmModel)
    assert np.array_equal(again.vectors[question], planted[0])


@pytest.mark.asyncio
async def test_texts_a_warm_model_brings_are_not_embedded_again(model_dir: Path) -> None:
    from symbiote.embedding.embedder import AsyncEmbedder
    from symbiote.embedding.model import WarmModel, load_embedder

    model = load_embedder(model_dir)
    stand_in = model.embed(["a completely different sentence"])[0]
    # The cache answers for "what are my hobbies?" with the vector the warm model brought: proof
    # that the model was not asked again (the real vector for it would differ).
    embedder = AsyncEmbedder(lambda: WarmModel(model, {"what are my hobbies?": stand_in}))
    try:
        got = await embedder.embed(["what are my hobbies?", "where do I live?"])
        assert np.array_equal(got[0], stand_in)
        assert np.allclose(got[1], model.embed(["where do I live?"])[0], atol=1e-6)
    finally:
        embedder.close()


def test_a_text_within_the_window_brings_its_sentences_vectors_from_one_run(onnx: OnnxEmbedder) -> None:
    text = "8 May 2023 Caroline: I went to the LGBTQ support group yesterday. It was so powerful! We hugged."
    (made,) = onnx.embed_passages([text])
    assert made.complete and made.windows == onnx.windows(text) and len(made.windows) == 4
    assert float(made.vectors[0] @ onnx.embed([text])[0]) > 0.9999  # the whole text's vector is the usual one
    assert np.allclose(np.linalg.norm(made.vectors, axis=1), 1.0, atol=1e-5)
    question = onnx.embed(["When did Caroline go to the support group?"])[0]
    best = int(np.argmax(made.vectors[1:] @ question))
    assert made.windows[1 + best].startswith("8 May 2023 Caroline: I went")  # each sentence is its own vector


def test_a_text_past_the_window_brings_its_whole_vector_only(onnx: OnnxEmbedder) -> None:
    short, long = onnx.embed_passages(["One line", TEXTS[-1]])
    assert short.complete and short.windows == ["One line"]
    assert not long.complete and len(long.vectors) == 1 and long.windows == onnx.windows(TEXTS[-1])


@pytest.mark.parametrize("stamp", ["1:56 pm on 8 May, 2023 ", "[2023-05-08 13:56] ", "Mon, 8 May 2023 13:56 - "])
def test_a_turn_has_the_same_vectors_however_it_is_dated(onnx: OnnxEmbedder, stamp: str) -> None:
    """The model reads every leading stamp as its date alone: a clock time before the speaker, or an ISO
    stamp, changes neither the whole vector nor the sentences', so it does not change a memory's rank."""
    said = "Melanie: I painted a sunrise over the lake last week. It took me all morning."
    (made,) = onnx.embed_passages([stamp + said])
    (dated,) = onnx.embed_passages(["8 May 2023 " + said])
    assert made.windows[1:] == dated.windows[1:] and made.windows[0] == stamp + said == onnx.windows(stamp + said)[0]
    assert np.allclose(made.vectors, dated.vectors, atol=1e-5)
    assert np.allclose(onnx.embed([stamp + said]), onnx.embed(["8 May 2023 " + said]), atol=1e-5)


def test_nothing_to_embed_gives_nothing(onnx: OnnxEmbedder) -> None:
    assert onnx.embed([]).shape == (0, MODEL_DIMENSION) and onnx.embed_passages([]) == []


def test_warm_vectors_kept_damaged_or_unkeepable_are_embedded_again_the_same(
    onnx: OnnxEmbedder, model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from symbiote.embedding import MANIFEST_NAME
    from symbiote.embedding.model import _warm_vectors

    beside = tmp_path / "model"  # what `_warm_vectors` reads of the model's folder: its manifest
    beside.mkdir()
    (beside / MANIFEST_NAME).write_bytes((model_dir / MANIFEST_NAME).read_bytes())
    texts = TEXTS[:3]
    first = _warm_vectors(onnx, beside, texts)
    (kept,) = beside.glob("warm-*.npy")
    kept.write_bytes(b"not an array")  # damaged (a crash mid-write, a bad disk)
    kept.with_suffix(".partial.npy").mkdir()  # and no new file can be written in its place
    again = _warm_vectors(onnx, beside, texts)
    assert np.array_equal(first, again) and first.shape == (3, MODEL_DIMENSION)
    assert "are unreadable" in caplog.text and "could not be kept" in caplog.text
