"""How unusual a memory's closeness to a query is, judged against a fixed background of memories.

MiniLM's cosine means different things for different queries: a short question sits near 0.3 to
the fact that answers it ("what camera do I use?" and "Shoots street photography on a Fujifilm
X-T5."), while a long request sits near 0.3 to anything on its subject. So a cut on the cosine
itself hides short questions' answers or lets long requests' junk through. Each query is
therefore also compared with `cohort.txt`, 480 typical memories about other people and
everyday conversation lines, written for the purpose: how far a memory's cosine stands above the
query's cosines to the background, in the background's standard deviations, says how unusual the
closeness is for this query (cohort normalisation, as in speaker verification). It needs no other
memory of the owner's, so a store of 6 memories scores a fact as a store of 5,000 does.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from symbiote.retrieval.thresholds import MIN_SPREAD

if TYPE_CHECKING:  # numpy is imported when first needed: it is not on the way to `initialize`
    import numpy as np

    from symbiote.embedding.embedder import AsyncEmbedder

TEXTS = Path(__file__).with_name("cohort.txt")


class Closeness(NamedTuple):
    """A query's cosines to the background: their mean and standard deviation."""

    mean: float
    spread: float

    def standing(self, cosine: float) -> float:
        """How many background deviations `cosine` stands above the background's mean."""
        return (cosine - self.mean) / self.spread


@cache
def texts() -> tuple[str, ...]:
    return tuple(line.strip() for line in TEXTS.read_text(encoding="utf-8").splitlines() if line.strip())


class Cohort:
    """The background's vectors; embedded once, then a matrix product per query."""

    def __init__(self, vectors: np.ndarray) -> None:
        self._vectors = vectors

    def closeness(self, query_vector: np.ndarray) -> Closeness:
        cosines = self._vectors @ query_vector
        return Closeness(float(cosines.mean()), max(float(cosines.std()), MIN_SPREAD))


async def embedded(embedder: AsyncEmbedder) -> Cohort:
    """The background embedded by this embedder (its vectors are kept beside the model, so this is quick):
    what the memory search and the history search both judge a query's closeness against."""
    return Cohort(await embedder.embed(texts()))
