"""all-MiniLM-L6-v2 sentence embeddings on onnxruntime, without torch.

Reproduces sentence-transformers' pipeline (WordPiece, 256-token window, mean pooling over
the attention mask, L2 normalisation) on an ONNX export of the same weights, because torch's
import alone costs more than the whole cold-start budget. Two intra-op threads where the
process may use two cores (one on Azure's half a vCPU), their spinning cut short after each
run: a spinning pool that keeps both cores after the run starves the event loop.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # numpy is imported when first needed: it is not on the way to `initialize`
    import numpy as np


from symbiote.embedding import MANIFEST_NAME, MODEL_DIMENSION, MODEL_NAME, ONNX_FILE  # noqa: F401 (re-exported)
from symbiote.embedding.stamp import canonical
from symbiote.errors import SymbioteError
from symbiote.workers import import_numpy, usable_cores

log = logging.getLogger(__name__)

MAX_THREADS = 2
SPIN_MICROSECONDS = 50
MAX_TOKENS = 256  # the model's window, [CLS] and [SEP] included
_WINDOW_BODY = MAX_TOKENS - 2
# Long texts are also indexed in spans of 128 tokens overlapping by 32, so no sentence is only
# ever seen cut in half and a short question is not outweighed by 250 tokens of other text.
_SPAN_TOKENS = 128
_SPAN_STRIDE = 96
HEAD_CHARS = 8_192  # characters tokenized for a text's window, enough for its 254 tokens but in rare texts
WARM_RUN = 32  # texts per run of the model when the warm vectors are made
SHRINK_TOKENS = 1_024  # a run of more tokens (padding included) gives its arena memory back after it
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def _head(text: str) -> str:
    """`text` cut at the last space, tab or line break before HEAD_CHARS (the whole text when
    shorter, or when there is none): BERT's tokenizer splits words there, so the head's tokens begin
    the text's. Control characters other than those vanish in its normalizer and join words: never a cut."""
    if len(text) <= HEAD_CHARS:
        return text
    cut = max(text.rfind(space, 0, HEAD_CHARS) for space in " \n\t\r")
    return text[:cut] if cut > 0 else text


class ModelMissingError(SymbioteError):
    """The exported model is not where configuration says it is."""


@dataclasses.dataclass(frozen=True)
class Passages:
    """A text's passages (the whole text first) and the vectors made of them so far: one per
    passage, or the whole text's alone when the others need runs of their own."""

    windows: list[str]
    vectors: np.ndarray

    @property
    def complete(self) -> bool:
        return len(self.vectors) == len(self.windows)


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised vectors of a fixed dimension."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> list[Passages]: ...

    def windows(self, text: str) -> list[str]: ...


class OnnxEmbedder:
    """The ONNX export run with onnxruntime; thread-compatible, not thread-safe for tokenizer state."""

    def __init__(self, model_dir: Path, threads: int | None = None) -> None:
        """`threads`: intra-op threads; by default as many of two cores as the process may use."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        manifest_path = model_dir / MANIFEST_NAME
        if not manifest_path.is_file() or not (model_dir / ONNX_FILE).is_file():
            raise ModelMissingError(
                f"No exported embedding model in {model_dir}. Run `symbiote export-model` "
                "(or scripts/setup.sh), or point SYMBIOTE_MODEL_DIR at an exported model."
            )
        manifest = json.loads(manifest_path.read_text())
        self.name: str = manifest["model"]
        self.dimension: int = int(manifest["dimension"])

        options = ort.SessionOptions()
        threads = threads or min(MAX_THREADS, usable_cores())
        options.intra_op_num_threads = threads
        if threads > 1:  # spin between the graph's small ops, not after the run: the CPU is the loop's then
            options.add_session_config_entry("session.intra_op.allow_spinning", "1")
            options.add_session_config_entry("session.intra_op.spin_duration_us", str(SPIN_MICROSECONDS))
            options.add_session_config_entry("session.force_spinning_stop", "1")
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(model_dir / ONNX_FILE), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        self._splitter = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._splitter.no_truncation()
        self._splitter.no_padding()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (each cut to the model's 256-token window, as sentence-transformers does)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        tokens, mask, _encodings = self._run(texts)
        return _pooled(tokens, mask)

    def embed_passages(self, texts: Sequence[str]) -> list[Passages]:
        """Each text's passages and their vectors, from one run of the model over the texts.

        A text that fits the window gets every passage's vector: its sentences are pooled from the
        whole text's token states ("late chunking"), so each sentence is read in its context (who
        speaks, of what) and costs no run of its own. A longer text gets its whole vector only: its
        paragraphs and spans lie past the window and need runs of their own (`windows`, `embed`).
        """
        import numpy as np

        if not texts:
            return []
        tokens, mask, encodings = self._run(texts)
        whole = _pooled(tokens, mask)
        made: list[Passages] = []
        for row, (text, encoding) in enumerate(zip(texts, encodings)):
            if len(encoding.ids) >= MAX_TOKENS:  # cut by the window (or filling it exactly): spans instead
                made.append(Passages(self.windows(text), whole[row : row + 1]))
                continue
            words = canonical(text)
            sentences = _sentences(words)
            if len(sentences) < 2:
                made.append(Passages([text], whole[row : row + 1]))
                continue
            vectors = [whole[row]]
            for start, end in _spans(words, sentences):
                picked = [i for i, (a, b) in enumerate(encoding.offsets) if b > a and a >= start and b <= end]
                vectors.append(_unit(tokens[row, picked].mean(axis=0)) if picked else whole[row])
            made.append(Passages([text, *sentences], np.stack(vectors).astype(np.float32)))
        return made

    def _run(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """The model's token states for `texts` (padded to the longest), the mask, the encodings."""
        import numpy as np

        encodings = self._encode(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        # A large run grows onnxruntime's arena by its activations, which the arena keeps for good
        # (16 texts of 256 tokens: some 450 MB); after one, the arena gives back what it holds unused.
        shrink = self._shrink if ids.size > SHRINK_TOKENS else None
        (tokens,) = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}, shrink
        )
        return tokens, mask, encodings

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        """Each text's tokens in the model's window. A long text is tokenized from its head (cut at a
        space, so every word before the cut is tokenized as in the whole text): the window holds its
        first 254 tokens only, and tokenizing 16 texts of 100,000 bytes whole took some 120 MB
        that the allocator kept. A head that turns out shorter than the window is done again whole."""
        texts = [canonical(text) for text in texts]  # one form of date stamp, however a memory is dated (`stamp`)
        heads = [_head(text) for text in texts]
        encodings: list[Any] = self._tokenizer.encode_batch(heads)
        for row, (text, head) in enumerate(zip(texts, heads)):
            if head is not text and len(encodings[row].ids) < MAX_TOKENS:
                encodings[row] = self._tokenizer.encode(text)
        return encodings

    def windows(self, text: str) -> list[str]:
        """The texts to index for `text`: itself first, then its parts.

        The whole text always comes first (the model sees its first 256 tokens, exactly as
        sentence-transformers would). A text of several sentences is also indexed sentence by
        sentence: a question usually targets one of them, and a mixed vector dilutes it
        (LoCoMo recall@5 +0.04). A text longer than the window is indexed per paragraph
        instead, long paragraphs cut into overlapping 128-token spans, so a question about the
        last paragraph is not drowned by the rest.
        """
        if len(self._splitter.encode(canonical(text), add_special_tokens=False).ids) < _WINDOW_BODY:
            sentences = _sentences(canonical(text))
            return [text, *sentences] if len(sentences) > 1 else [text]
        spans = [text]
        for paragraph in _PARAGRAPH.split(text):
            paragraph = paragraph.strip()
            if not paragraph:
                continue
            offsets = self._splitter.encode(paragraph, add_special_tokens=False).offsets
            if len(offsets) <= _SPAN_TOKENS:
                spans.append(paragraph)
                continue
            start = 0
            while True:
                end = min(start + _SPAN_TOKENS, len(offsets))
                spans.append(paragraph[offsets[start][0] : offsets[end - 1][1]])
                if end == len(offsets):
                    break
                start += _SPAN_STRIDE
        return spans


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) > 2]


def _spans(text: str, sentences: Sequence[str]) -> list[tuple[int, int]]:
    """Where each of `text`'s sentences (in order, as `_sentences` cut them) begins and ends."""
    found = []
    at = 0
    for sentence in sentences:
        start = text.find(sentence, at)
        at = start + len(sentence)
        found.append((start, at))
    return found


def _pooled(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean pooling over the attention mask, then unit length: sentence-transformers' vector."""
    import numpy as np

    weights = mask[:, :, None].astype(np.float32)
    pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


def _unit(vector: np.ndarray) -> np.ndarray:
    import numpy as np

    norm = float(np.linalg.norm(vector))
    unit: np.ndarray = (vector / max(norm, 1e-12)).astype(np.float32)
    return unit


def load_embedder(model_dir: Path) -> Embedder:
    """The exported ONNX model; exported on the spot if missing and the build tools are installed."""
    import_numpy()
    if not (model_dir / MANIFEST_NAME).is_file():
        try:
            from symbiote.embedding.onnx_export import export_model
        except ImportError:
            raise ModelMissingError(
                f"No exported embedding model in {model_dir}. Run scripts/setup.sh or `symbiote export-model`."
            ) from None
        log.warning("no exported model in %s; exporting it now (once)", model_dir)
        try:
            export_model(model_dir)
        except ImportError as exc:
            raise ModelMissingError(
                f"No exported embedding model in {model_dir}, and the export tools are not installed ({exc}). "
                "Run scripts/setup.sh, or set SYMBIOTE_MODEL_DIR to an exported model."
            ) from None
    return OnnxEmbedder(model_dir)


@dataclasses.dataclass(frozen=True)
class WarmModel:
    """A loaded model with texts it has already embedded (the topic questions), for the cache."""

    model: Embedder
    vectors: dict[str, np.ndarray]


def load_warm(model_dir: Path, texts: Sequence[str]) -> WarmModel:
    """`load_embedder`, then the vectors of `texts`: all the model work the first search would
    otherwise wait for. Kept beside the model (`warm-<digest>.npy`), since the topic questions and
    the background take the model about two seconds, the whole first search's budget."""
    model = load_embedder(model_dir)
    unique = list(dict.fromkeys(texts))
    if not unique:
        return WarmModel(model, {})
    return WarmModel(model, dict(zip(unique, _warm_vectors(model, model_dir, unique))))


def _warm_vectors(model: Embedder, model_dir: Path, texts: list[str]) -> np.ndarray:
    """The vectors of `texts`, from the file a previous start kept, else embedded and kept."""
    import hashlib

    import numpy as np

    manifest = (model_dir / MANIFEST_NAME).read_text(encoding="utf-8")  # a new export, new vectors
    digest = hashlib.sha256("\n".join([manifest, *texts]).encode()).hexdigest()[:16]
    kept = model_dir / f"warm-{digest}.npy"
    if kept.is_file():
        try:
            vectors: np.ndarray = np.load(kept)
        except (OSError, ValueError) as exc:
            log.warning("the warm vectors in %s are unreadable (%s); embedding them again", kept, exc)
        else:
            if vectors.shape == (len(texts), model.dimension):
                return vectors
    # In runs of WARM_RUN texts: all of them in one run held some 600 MB of activations at its peak.
    vectors = np.concatenate([model.embed(texts[at : at + WARM_RUN]) for at in range(0, len(texts), WARM_RUN)])
    try:
        partial = kept.with_suffix(".partial.npy")
        np.save(partial, vectors)
        partial.replace(kept)
        for stale in model_dir.glob("warm-*.npy"):
            if stale != kept:
                stale.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("the warm vectors could not be kept in %s (%s); they are embedded at each start", model_dir, exc)
    return vectors
