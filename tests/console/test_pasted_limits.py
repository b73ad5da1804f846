"""Issue 49, over the real app in this process through the console's forms (as the page posts them): a pasted
list up to its documented 2 MiB reaches the preview (before, a bare "Field exceeded maximum size of
1024KB"), and "Undo this import" trashes only what that import added, not older memories that
carry the same tag."""

from __future__ import annotations

import re

import httpx

from tests.conftest import InProcess


async def _csrf(http: httpx.AsyncClient) -> str:
    return (await http.get("/console/transfer")).text.split('name="csrf-token" content="')[1].split('"')[0]


async def _paste(http: httpx.AsyncClient, text: str, tag: str, action: str) -> httpx.Response:
    form = {"csrf": await _csrf(http), "text": text, "tag": tag, "action": action}
    return await http.post("/console/import/text", data=form)


async def test_a_paste_of_almost_2_mib_is_previewed(in_process: InProcess) -> None:
    lines = [f"- Long paste line {i}: " + "the quick brown fox jumps over the lazy dog " * 22 for i in range(1_900)]
    text = "\n".join(lines)
    assert 1024 * 1024 < len(text.encode()) < 2 * 1024 * 1024
    async with in_process.http() as http:
        preview = await _paste(http, text, "pasted-long", "preview")
    assert preview.status_code == 200, preview.text[:500]
    assert "1900 would be added" in preview.text


async def test_undo_takes_back_only_what_the_import_added(in_process: InProcess) -> None:
    async with in_process.http() as http:
        first = await _paste(http, "- Keeps bees on the roof of the shed", "pasted-twice", "store")
        assert "1 added" in first.text
        second = await _paste(http, "- Plays the cello on Sunday mornings", "pasted-twice", "store")
        span = dict(re.findall(r'name="(from|to)" value="(\d+)"', second.text))
        form = {"csrf": await _csrf(http), "tag": "pasted-twice", **span}
        undone = await http.post("/console/import/undo", data=form, follow_redirects=False)
        assert undone.status_code == 303 and "deleted=1" in undone.headers["location"], undone.text[:500]
        left = (await http.get("/console/", params={"tag": "pasted-twice"})).text
    assert "Keeps bees on the roof" in left and "Plays the cello" not in left


async def test_uploads_under_way_at_once_are_capped(in_process: InProcess) -> None:
    """Finding 6: twenty uploads left "uploading" held up to 1 GiB each and blocked imports for an
    hour; now two at once, and a third is refused in words (one left silent is dropped after ten minutes)."""
    async with in_process.http() as http:
        csrf = {"X-CSRF-Token": await _csrf(http)}
        first, second = [await http.post("/console/import", headers=csrf) for _ in range(2)]
        assert first.status_code == second.status_code == 200
        third = await http.post("/console/import", headers=csrf)
    assert third.status_code == 429 and "Another upload is under way" in third.text
