"""Imports from the owner's console that say what happened, in Debian's Chromium against a real
`symbiote serve` with auth on: a file that is not an export is refused in one sentence with nothing
written; refused lines are listed with their numbers in the warning colour, in words (never a
decoder's); one import at a time; an import is found again after leaving the page; a dry run words
its report as the real run does."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from symbiote.transfer.importing import EMPTY_FILE, NOT_AN_EXPORT
from tests.conftest import ServerProcess
from tests.console.owner_browser import signed_in_page

pytestmark = pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")

HEADER = json.dumps({"format": "symbiote-memories", "version": 1, "model": "all-MiniLM-L6-v2", "dimension": 384})
WARNING_COLOUR = "rgb(122, 75, 0)"  # console.css .warning


def memory(i: int, topic: str = "greenhouse") -> str:
    return json.dumps({"kind": "memory", "content": f"Import note {i}: the {topic} needs attention on day {i}."})


async def import_file(page: Any, server: ServerProcess, path: Path, dry_run: bool = False) -> str:
    """Import through the page; the final status's text."""
    await page.goto(f"{server.base_url}/console/transfer")
    await page.set_input_files("#import-file", str(path))
    if dry_run:
        await page.check("#import-dry")
    await page.click("#import-button")
    await page.wait_for_selector("#import-status[data-state=done], #import-status[data-state=failed]", timeout=120_000)
    return str(await page.inner_text("#import-status"))


async def memory_count(page: Any, server: ServerProcess) -> str:
    await page.goto(f"{server.base_url}/console/")
    if not await page.locator(".toolbar .count").count():  # the empty console: its welcome, no list
        return "0 memories"
    return str(await page.inner_text(".toolbar .count"))


async def test_files_that_are_not_exports_are_refused_in_one_sentence_with_nothing_written(
    browser: Any, server: ServerProcess, tmp_path: Path
) -> None:
    page = await signed_in_page(browser, server)
    before = await memory_count(page, server)
    binary = tmp_path / "photo.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(4000) + b"\x9a\xff\n" + os.urandom(2000))
    csv = tmp_path / "contacts.csv"
    csv.write_text('name,email\nAna,ana@example.org\n"Bo, Jr",bo@example.org\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n   \n")
    for path, sentence in [(binary, NOT_AN_EXPORT), (csv, NOT_AN_EXPORT), (empty, EMPTY_FILE), (blank, EMPTY_FILE)]:
        status = await import_file(page, server, path)
        assert status.strip() == sentence, (path.name, status)
        assert await page.get_attribute("#import-status", "data-state") == "failed"
        assert "codec" not in status and "Expecting" not in status
    assert await memory_count(page, server) == before
    await page.context.close()


async def test_refused_lines_are_listed_with_their_numbers_in_the_warning_colour(
    browser: Any, server: ServerProcess, tmp_path: Path
) -> None:
    lines = [
        HEADER.encode(),
        memory(1).encode(),
        b"{not json",
        memory(2).encode(),
        b'{"kind": "memory", "content": "caf\xe9 \x9a"}',
    ]
    lines += [json.dumps({"kind": "memory", "content": ""}).encode(), memory(3).encode()]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    page = await signed_in_page(browser, server)
    status = await import_file(page, server, path)
    assert "3 added" in status and "3 refused" in status
    refused = await page.locator(".refused li").all_inner_texts()
    assert refused[0] == "line 3: not valid JSON" and refused[1] == "line 5: not text (not UTF-8)"
    assert refused[2].startswith("line 6: ")
    assert "codec" not in status and "Expecting" not in status and "char " not in status
    summary = page.locator("#import-status p[role=status]")
    assert await summary.get_attribute("class") == "warning"
    for selector in ("#import-status p[role=status]", ".refused"):
        colour = await page.eval_on_selector(selector, "e => getComputedStyle(e).color")
        assert colour == WARNING_COLOUR, selector
    await page.context.close()


async def test_one_import_at_a_time_found_again_after_leaving_the_page(
    browser: Any, server: ServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join([HEADER] + [memory(i, "orchard") for i in range(100, 1600)]) + "\n")
    page = await signed_in_page(browser, server)
    await page.goto(f"{server.base_url}/console/transfer")
    await page.set_input_files("#import-file", str(path))
    await page.click("#import-button")
    await page.wait_for_selector("#import-status[data-state=running], #import-status[data-state=waiting]")
    assert await page.is_disabled("#import-button")  # a second click cannot queue the file again

    await page.goto(f"{server.base_url}/console/")  # leave, and come back while it runs
    await page.goto(f"{server.base_url}/console/transfer")
    if await page.get_attribute("#import-status", "data-state") in ("running", "waiting"):
        assert await page.is_disabled("#import-button")
        assert "An import is running" in await page.inner_text("#import-busy")
    await page.wait_for_selector("#import-status[data-state=done]", timeout=180_000)
    assert not await page.is_disabled("#import-button")  # enabled again once it has finished

    await page.goto(f"{server.base_url}/console/")
    await page.goto(f"{server.base_url}/console/transfer")
    listed = page.locator("#imports li").first
    assert "big.jsonl" in await listed.inner_text() and "1500 added" in await listed.inner_text()
    await listed.locator("a").click()
    await page.wait_for_url("**/console/import/*")
    assert await page.inner_text("h1") == "Import of big.jsonl"
    assert await page.inner_text("#count-added") == "1500"
    await page.context.close()


async def test_a_dry_run_words_its_report_as_the_real_run_does(
    browser: Any, server: ServerProcess, tmp_path: Path
) -> None:
    turns = [
        json.dumps({"kind": "turn", "conversation_id": "dry-chat", "turn_index": i, "role": role, "text": text})
        for i, (role, text) in enumerate([("user", "Is the pond frozen?"), ("assistant", "Not yet.")])
    ]
    path = tmp_path / "dry.jsonl"
    path.write_text("\n".join([HEADER, memory(9001, "pond"), memory(9002, "pond"), *turns]) + "\n")
    page = await signed_in_page(browser, server)
    before = await memory_count(page, server)
    dry = await import_file(page, server, path, dry_run=True)
    assert dry.startswith("Dry run: 2 would be added,") and "2 conversation turns would be added" in dry
    assert "Would be added\n2" in dry and "2 added" not in dry
    assert await memory_count(page, server) == before
    real = await import_file(page, server, path)
    assert real.startswith("2 added,") and "2 conversation turns added, 0 already there" in real
    await page.context.close()
