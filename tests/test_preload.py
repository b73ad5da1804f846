"""The model loads (and embeds the topic questions) while the server imports the MCP SDK."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from symbiote.fastboot import preload
from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.embedding.model import MANIFEST_NAME, WarmModel, load_embedder
from symbiote.runtime import load_embedder as runtime_load
from symbiote.retrieval.topics import TopicIndex


def test_the_runtime_takes_the_preloaded_model_once(model_dir: Path) -> None:
    questions = TopicIndex.questions()
    preload.start(model_dir, questions)
    taken = runtime_load(model_dir)
    assert isinstance(taken, WarmModel)
    assert list(taken.vectors) == list(dict.fromkeys(questions))
    fresh = taken.model.embed(questions[:3])
    assert np.allclose(np.stack([taken.vectors[q] for q in questions[:3]]), fresh, atol=1e-6)
    again = runtime_load(model_dir)  # taken once; then loaded again, with the questions' vectors
    assert isinstance(again, WarmModel) and again.model is not taken.model
    assert np.allclose(np.stack([again.vectors[q] for q in questions[:3]]), fresh, atol=1e-6)


def test_a_failed_preload_leaves_the_error_to_the_runtimes_own_load(tmp_path: Path) -> None:
    broken = tmp_path / "broken-model"  # a manifest without the model it describes
    broken.mkdir()
    (broken / MANIFEST_NAME).write_text("{}", encoding="utf-8")
    preload.start(broken, ["anything"])
    assert preload.take(broken) is None
    preload.start(broken, ["anything"])
    with pytest.raises(Exception) as raised:
        runtime_load(broken)
    with pytest.raises(type(raised.value)):  # the same failure as loading without a preload
        load_embedder(broken)


@pytest.mark.asyncio
async def test_texts_embedded_by_the_preload_are_not_embedded_again(model_dir: Path) -> None:
    model = load_embedder(model_dir)
    stand_in = model.embed(["a completely different sentence"])[0]
    # The cache answers for "what are my hobbies?" with what the preload computed: proof that the
    # model was not asked again (the real vector for it would differ).
    embedder = AsyncEmbedder(lambda: WarmModel(model, {"what are my hobbies?": stand_in}))
    try:
        got = await embedder.embed(["what are my hobbies?", "where do I live?"])
        assert np.array_equal(got[0], stand_in)
        assert np.allclose(got[1], model.embed(["where do I live?"])[0], atol=1e-6)
    finally:
        embedder.close()
