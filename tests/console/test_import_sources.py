"""The console imports other programs' files and a pasted list, in Debian's Chromium against a real
`symbiote serve`: mcp-memory-service's database (written by the real program), a second time adding
nothing; a pasted list previewed before anything is stored, stored with its tag, undone in one step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ServerProcess
from tests.console.owner_browser import signed_in_page
from tests.console.test_imports import import_file, memory_count

pytestmark = pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def test_memory_service_database_from_the_console_and_again_adds_nothing(
    browser: Any, server: ServerProcess
) -> None:
    page = await signed_in_page(browser, server)
    first = await import_file(page, server, FIXTURES / "memory-service" / "sqlite_vec.db")
    assert "5 added" in first and "1 deleted in the source, left out" in first, first
    again = await import_file(page, server, FIXTURES / "memory-service" / "sqlite_vec.db")
    assert "0 added, 5 unchanged" in again, again
    await page.context.close()


async def test_a_pasted_list_is_previewed_stored_with_its_tag_and_undone_in_one_step(
    browser: Any, server: ServerProcess
) -> None:
    page = await signed_in_page(browser, server)
    before = await memory_count(page, server)
    await page.goto(f"{server.base_url}/console/transfer")
    await page.fill("#pasted-text", "## About me\n- Keeps bees on the roof\n- Plays the cello on Sundays\n")
    await page.fill("#pasted-tag-new", "pasted-console-test")
    await page.click("#pasted-preview")
    preview = await page.inner_text("#pasted-report")
    assert "Nothing is stored yet" in preview and "2 would be added" in preview and "1 refused" in preview
    assert "line 1: not stored: a heading" in await page.inner_text("#pasted-lines")
    await page.click("#pasted-confirm")
    assert "2 added" in await page.inner_text("#pasted-report")
    await page.click("#undo-paste")
    assert "Deleted 2 memories" in await page.inner_text("main")
    after_undo = page.url
    assert await memory_count(page, server) == before
    await page.goto(after_undo)
    await page.click("#undo-delete")
    await page.goto(f"{server.base_url}/console/?tag=pasted-console-test")
    assert await page.locator("li.memory").count() == 2
    await page.context.close()
