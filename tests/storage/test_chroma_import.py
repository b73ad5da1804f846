"""Chroma imported without the `overrides` signature checks: the same classes, the decorator restored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import overrides
original = overrides.override
from symbiote.storage.chroma.client import embedded_client, import_chromadb
import_chromadb()  # as a Chroma server's client does (`connect_server`)
import chromadb.api.rust as rust
assert overrides.override is original, "the decorator is restored after Chroma's import"
assert rust.RustBindingsAPI.count_collections.__override__ is True  # EnforceOverrides' mark is set
client = embedded_client(__import__("pathlib").Path(%r))
collection = client.get_or_create_collection("probe", metadata={"hnsw:space": "cosine"})
collection.add(ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]], documents=["one", "two"])
found = collection.query(query_embeddings=[[0.9, 0.1]], n_results=1)
print(found["ids"][0][0], found["documents"][0][0])
"""


def test_chroma_works_and_the_decorator_is_restored(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE % str(tmp_path / "store")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["a", "one"]
