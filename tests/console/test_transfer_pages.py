"""The console's file import as its page's script drives it (`symbiote.console.transfer_pages`,
`symbiote.console.jobs`), in this process over the real app: a job made, its file sent in parts,
started and reported; an unknown or finished import, or a request without the page's token,
answered in words with nothing imported.

In Chromium against a real server: tests/console/test_imports.py."""

from __future__ import annotations

import asyncio
import json
import re

import httpx

from tests.conftest import InProcess

LINES = "\n".join(
    json.dumps({"kind": "memory", "content": f"Console import note {n}: the bike pump is in shed {n}."})
    for n in range(3)
)


async def _token(http: httpx.AsyncClient) -> dict[str, str]:
    page = (await http.get("/console/transfer")).text
    return {"X-CSRF-Token": page.split('name="csrf-token" content="')[1].split('"')[0]}


async def _state(http: httpx.AsyncClient, job: str) -> str:
    for _ in range(600):  # the import runs in this event loop: each poll lets it go on
        page = (await http.get(f"/console/import/{job}", headers={"HX-Request": "true"})).text
        state = re.search(r'data-state="(\w+)"', page)
        if state is not None and state.group(1) in ("done", "failed"):
            return state.group(1)
        await asyncio.sleep(0.01)
    raise AssertionError("the import did not end")


async def test_a_file_sent_in_parts_is_imported_and_then_can_be_neither_restarted_nor_cancelled(
    in_process: InProcess,
) -> None:
    async with in_process.http() as http:
        csrf = await _token(http)
        job = (await http.post("/console/import", params={"name": "notes.jsonl"}, headers=csrf)).json()["job"]
        half = len(LINES) // 2
        for part in (LINES[:half], LINES[half:]):
            sent = await http.post(f"/console/import/{job}/part", content=part.encode(), headers=csrf)
            assert sent.status_code == 200
        assert (await http.post(f"/console/import/{job}/start?dry_run=0", headers=csrf)).status_code == 200
        assert await _state(http, job) == "done"
        page = await http.get(f"/console/import/{job}")  # its own page, found again after leaving
        assert page.status_code == 200 and '<dd id="count-added">3</dd>' in page.text
        again = await http.post(f"/console/import/{job}/start?dry_run=0", headers=csrf)
        assert again.status_code == 409 and again.text == "This import has already started."
        form = {"csrf": csrf["X-CSRF-Token"]}
        cancelled = await http.post(f"/console/import/{job}/cancel", data=form)
        assert cancelled.status_code == 409 and "This import is not running." in cancelled.text
    assert (await in_process.engine.stats()).total_memories == 3


async def test_an_unknown_import_or_a_request_without_the_page_s_token_is_refused_in_words(
    in_process: InProcess,
) -> None:
    async with in_process.http() as http:
        csrf = await _token(http)
        assert (await http.post("/console/import/nope/start")).status_code == 403  # no token
        unknown = await http.post("/console/import/nope/start", headers=csrf)
        assert unknown.status_code == 404 and unknown.text == "No such import."
        expired = await http.post("/console/import/nope/cancel", data={})
        assert expired.status_code == 403 and "This form has expired" in expired.text
        gone = await http.post("/console/import/nope/cancel", data={"csrf": csrf["X-CSRF-Token"]})
        assert gone.status_code == 404 and "imports are forgotten after an hour" in gone.text
        page = await http.get("/console/import/nope")
        assert page.status_code == 404 and "<html" in page.text and "forgotten after an hour" in page.text
        part = await http.get("/console/import/nope", headers={"HX-Request": "true"})
        assert part.status_code == 404 and part.text.startswith("<p>This import is no longer known")
    assert (await in_process.engine.stats()).total_memories == 0
