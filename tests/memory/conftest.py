"""The conversation history's fixtures: one runtime per backend (embedded Chroma, a Chroma server)
for a whole module, its tests keeping apart by using conversation ids of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from symbiote.memory.history import ConversationHistory
from symbiote.runtime import Runtime
from tests.chroma_server import Backend, chroma_server  # noqa: F401  (fixture)
from tests.conftest import make_runtime


@pytest.fixture(scope="module", params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def backend_runtime(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """A runtime on each backend, for the module."""
    server = request.getfixturevalue("chroma_server") if request.param == "server" else None
    module = request.module.__name__.rsplit(".", 1)[-1]
    built = make_runtime(
        Backend(request.param, tmp_path_factory.mktemp(f"{module}-{request.param}"), server).settings()
    )
    yield built
    built.close()


@pytest.fixture
def history(backend_runtime: Runtime) -> ConversationHistory:
    assert backend_runtime.history is not None
    return backend_runtime.history.history
