"""The auth package's shared OAuth server: one process for the modules that need one with the same
configuration (their tests register their own clients and store their own memories)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.auth.support import oauth_env
from tests.conftest import ServerProcess


@pytest.fixture(scope="package")
def oauth_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    """`symbiote serve` in oauth mode, as behind a proxy of ours: X-Forwarded-For names the address
    the consent page's limiter counts (a client that sends none is counted by its own address)."""
    proc = ServerProcess(tmp_path_factory.mktemp("oauth") / "data", env=oauth_env(SYMBIOTE_TRUST_FORWARDED_HEADERS="1"))
    yield proc.start()
    proc.stop()
