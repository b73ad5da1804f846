"""The shipped memory-card.html is what the committed sources build: rebuilt into a temporary file
with the card's pinned toolchain and compared byte for byte."""

from __future__ import annotations

import base64
import hashlib
import subprocess
from pathlib import Path

from tests.e2e.card.conftest import CARD_DIR, require_toolchain


def test_the_shipped_card_is_what_its_sources_build(tmp_path: Path) -> None:
    require_toolchain()
    out = tmp_path / "memory-card.html"
    built = subprocess.run(
        ["node", str(CARD_DIR / "build.mjs"), "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    assert built.returncode == 0, built.stderr
    shipped = (CARD_DIR / "memory-card.html").read_bytes()
    assert out.read_bytes() == shipped, "symbiote/mcp/card/memory-card.html is stale: run scripts/build-card.sh"


def test_the_card_s_policy_allows_only_its_own_inline_blocks() -> None:
    html = (CARD_DIR / "memory-card.html").read_text(encoding="utf-8")
    head = html.split("</head>", 1)[0]
    policy = head.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"].startswith("'sha256-") and " " not in directives["script-src"]
    assert directives["style-src"].startswith("'sha256-") and " " not in directives["style-src"]
    for name in ("connect-src", "img-src", "base-uri", "form-action", "object-src"):
        assert directives[name] == "'none'", name
    # The hashes are those of the blocks inlined: the browser runs the one script and applies the one style.
    script = html.split("<script>", 1)[1].rsplit("</script>", 1)[0]
    style = head.split("<style>", 1)[1].split("</style>", 1)[0]
    assert directives["script-src"] == sha256(script)
    assert directives["style-src"] == sha256(style)


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_card_never_parses_markup() -> None:
    """Memory text is untrusted: the card's source builds nodes and never hands a string to the parser."""
    source = (CARD_DIR / "src" / "card.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "DOMParser", "srcdoc", "eval("):
        assert sink not in source, sink
