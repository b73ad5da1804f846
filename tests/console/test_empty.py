"""The empty console tells a new owner how to connect Claude, ChatGPT or VS Code (this server's
/mcp URL, with a copy button) and how to import; it offers nothing to delete."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ServerProcess
from tests.console.conftest import DESKTOP, PHONE, open_page

pytestmark = pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")


async def test_a_new_owner_is_told_how_to_connect_and_import(browser: Any, empty_server: ServerProcess) -> None:
    page = await open_page(browser, empty_server, PHONE, sign_in=False)
    assert await page.inner_text("#mcp-url") == f"{empty_server.base_url}/mcp"
    text = await page.inner_text("main")
    for words in ("Claude", "ChatGPT", "VS Code", "Add custom connector", "Developer mode", "Export & import"):
        assert words in text, words
    assert await page.locator("button", has_text="Delete").count() == 0
    assert await page.locator("input[type=checkbox]").count() == 0
    assert "0 memories" not in text
    await page.click("main a[href$='/transfer']")
    await page.wait_for_url(f"{empty_server.base_url}/console/transfer")
    await page.context.close()


async def test_the_copy_button_copies_the_url(browser: Any, empty_server: ServerProcess) -> None:
    context = await browser.new_context(viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"])
    page = await context.new_page()
    await page.goto(f"{empty_server.base_url}/console/")
    await page.click("button[data-copy]")
    await page.wait_for_function("document.getElementById('copy-done').textContent.length > 0")
    assert await page.evaluate("navigator.clipboard.readText()") == f"{empty_server.base_url}/mcp"
    assert "Copied" in await page.inner_text("#copy-done")
    await context.close()


async def test_a_filter_that_finds_nothing_is_not_the_welcome(browser: Any, empty_server: ServerProcess) -> None:
    page = await open_page(browser, empty_server, DESKTOP, sign_in=False)
    await page.goto(f"{empty_server.base_url}/console/?tag=nothing")
    assert await page.locator("#mcp-url").count() == 0
    assert "0 memories" in await page.inner_text(".toolbar .count")
    assert await page.locator("form.selection button.danger").is_disabled()
    await page.context.close()
