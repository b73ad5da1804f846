"""Issue 39: no log line carries a raw control character from a request. A `client_id` with `%0A`
at `/authorize` (no sign-in needed) wrote a second line that read like the owner's approval. The
rule in the filter here; the line a real server writes to its log in tests/http/test_request_heads.py,
on that module's server."""

from __future__ import annotations

import logging

from symbiote.telemetry.redaction import RedactingFilter


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
