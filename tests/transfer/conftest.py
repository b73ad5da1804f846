"""The transfer package's shared server for hostile imports through the console."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ServerProcess

# The mark of the tests that use `importing`.
IMPORTING = pytest.mark.server(
    "the process is the point: the server's memory, and its answers to a second client, while a hostile import runs"
)


@pytest.fixture(scope="package")
def importing(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    """One server (loopback, auth off: the console is open) for the package's modules that import
    hostile files through its console: each test looks at its own import's report, and measures the
    server's memory and answers from where they are when it starts."""
    proc = ServerProcess(tmp_path_factory.mktemp("import") / "data").start()
    yield proc
    proc.stop()


@pytest.fixture(autouse=True)
def close_consoles() -> Iterator[None]:
    """Every console connection a test opened (`Console`), closed after it."""
    from tests.transfer.test_hardening import Console

    yield
    while Console.opened:
        Console.opened.pop().close()
