"""Issue 49, against a real server through the console's forms (as the page posts them): a pasted
list up to its documented 2 MiB reaches the preview (before, a bare "Field exceeded maximum size of
1024KB"), and "Undo this import" trashes only what that import added, not older memories that
carry the same tag."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ServerProcess

pytestmark = pytest.mark.server("the transport is the point: the form's body size limit of the real HTTP server")


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[httpx.Client]:
    proc = ServerProcess(tmp_path_factory.mktemp("pasted") / "data").start()  # loopback, auth off
    with httpx.Client(base_url=f"{proc.base_url}/console", timeout=120) as http:
        yield http
    proc.stop()


def _csrf(http: httpx.Client) -> str:
    return http.get("/transfer").text.split('name="csrf-token" content="')[1].split('"')[0]


def _paste(http: httpx.Client, text: str, tag: str, action: str) -> httpx.Response:
    return http.post("/import/text", data={"csrf": _csrf(http), "text": text, "tag": tag, "action": action})


def test_a_paste_of_almost_2_mib_is_previewed(console: httpx.Client) -> None:
    lines = [f"- Long paste line {i}: " + "the quick brown fox jumps over the lazy dog " * 22 for i in range(1_900)]
    text = "\n".join(lines)
    assert 1024 * 1024 < len(text.encode()) < 2 * 1024 * 1024
    preview = _paste(console, text, "pasted-long", "preview")
    assert preview.status_code == 200, preview.text[:500]
    assert "1900 would be added" in preview.text


def test_undo_takes_back_only_what_the_import_added(console: httpx.Client) -> None:
    first = _paste(console, "- Keeps bees on the roof of the shed", "pasted-twice", "store")
    assert "1 added" in first.text
    second = _paste(console, "- Plays the cello on Sunday mornings", "pasted-twice", "store")
    span = dict(re.findall(r'name="(from|to)" value="(\d+)"', second.text))
    undone = console.post(
        "/import/undo", data={"csrf": _csrf(console), "tag": "pasted-twice", **span}, follow_redirects=False
    )
    assert undone.status_code == 303 and "deleted=1" in undone.headers["location"], undone.text[:500]
    left = console.get("/", params={"tag": "pasted-twice"}).text
    assert "Keeps bees on the roof" in left and "Plays the cello" not in left


def test_uploads_under_way_at_once_are_capped(console: httpx.Client) -> None:
    """Finding 6: twenty uploads left "uploading" held up to 1 GiB each and blocked imports for an
    hour; now two at once, and a third is refused in words (one left silent is dropped after ten minutes)."""
    csrf = {"X-CSRF-Token": _csrf(console)}
    first, second = (console.post("/import", headers=csrf) for _ in range(2))
    assert first.status_code == second.status_code == 200
    third = console.post("/import", headers=csrf)
    assert third.status_code == 429 and "Another upload is under way" in third.text
