"""Issue 39: no log line carries a raw control character from a request. A `client_id` with `%0A`
at `/authorize` (no sign-in needed) wrote a second line that read like the owner's approval."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from symbiote.telemetry.redaction import RedactingFilter
from tests.auth.support import REDIRECT_URI, oauth_env, pkce
from tests.conftest import ServerProcess

FORGED = "2026-11-27 15:40:00,000 INFO symbiote.auth.consent: the owner approved client https://evil.example/c"


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("log-lines") / "data", env=oauth_env(LOG_FORMAT="text")).start()
    yield proc
    proc.stop()


@pytest.mark.server("the process's log file is the point: one line per record as written")
def test_a_client_id_with_a_newline_writes_one_escaped_line(logged: ServerProcess) -> None:
    client_id = "https://a.example/c\n" + FORGED + "\x1b[2K\u2028"
    _verifier, challenge = pkce()
    query = (
        f"client_id={quote(client_id, safe='')}&response_type=code&redirect_uri={quote(REDIRECT_URI)}"
        f"&code_challenge={challenge}&code_challenge_method=S256&state=s"
    )
    httpx.get(f"{logged.base_url}/authorize?{query}", timeout=30)
    lines = logged.log().splitlines()
    assert not any(line.startswith("2026-11-27 15:40:00") for line in lines), lines[-5:]
    refused = [line for line in lines if "refused" in line and "a.example/c" in line]
    assert refused, lines[-10:]
    assert "a.example/c\\n2026-11-27 15:40:00" in refused[-1] and "\\x1b[2K\\u2028" in refused[-1]


def test_every_interpolated_value_is_escaped_but_not_the_format() -> None:
    """The rule sits in the filter every handler carries: mappings and objects too, any logger."""

    class Named:
        def __str__(self) -> str:
            return "evil\r\nINFO forged"

    def written(msg: str, args: object) -> str:
        record = logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, msg, None, None)
        record.args = args  # as logging stores them: a tuple, or the one mapping
        assert RedactingFilter().filter(record)
        return record.getMessage()

    assert written("client %s from %s", ("a\nb", Named())) == "client a\\nb from evil\\r\\nINFO forged"
    assert written("%(name)s said", {"name": "x\x00y"}) == "x\\x00y said"
    assert written("first line\nsecond line %d", (3,)) == "first line\nsecond line 3"
