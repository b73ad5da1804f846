"""The sentence-embedding model: loading, exporting and calling it off the event loop.

The model's identity lives here, so that the exporter, the loader and the store agree on it
without importing one another.
"""

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIMENSION = 384
ONNX_FILE = "model.onnx"
MANIFEST_NAME = "symbiote-model.json"
