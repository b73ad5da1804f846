"""The sentence-embedding model: loading, exporting and calling it off the event loop.

The model's identity lives here, so that the exporter, the loader and the store agree on it
without importing one another.

This is the package's door: other packages import from `symbiote.embedding`, never from a module
inside it (tests/test_layers.py checks). It imports nothing: `symbiote serve` reads the model's name
and dimension here before it listens, to start the store process. The modules are let out whole
and imported where used: `embedder` (the async embedder, with the OpenTelemetry API), `model` (the
model on onnxruntime, imported on first load), `onnx_export` (the build-time export, torch) and `stamp`.
"""

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIMENSION = 384
ONNX_FILE = "model.onnx"
MANIFEST_NAME = "symbiote-model.json"

__all__ = [
    "MANIFEST_NAME",
    "MODEL_DIMENSION",
    "MODEL_NAME",
    "ONNX_FILE",
    "embedder",
    "onnx_export",
    "model",
    "stamp",
]
