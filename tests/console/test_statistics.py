"""The owner's statistics page: what the owner wants first (how many, the newest, tags, types,
conversations), the store's internals folded away; and the case-insensitive tag filter with its picker."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ServerProcess
from tests.console.conftest import DESKTOP, open_page

pytestmark = pytest.mark.server("a browser drives the console: it needs the server's URL and real socket")


async def test_statistics_lead_with_the_owners_questions_and_fold_the_internals(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, DESKTOP)
    await page.goto(f"{owner_server.base_url}/console/stats")
    newest = await page.locator("ul.newest li a").all_inner_texts()
    assert len(newest) == 5 and any(text.startswith("يفضل الشاي") for text in newest)  # the newest of the seed
    assert "conversations recorded" in await page.inner_text(".cards")
    internals = page.locator("details.internals")
    assert await internals.get_attribute("open") is None
    assert not await page.locator("text=Mean store").is_visible()  # folded away
    await page.click("details.internals summary")
    assert await page.locator("text=Mean store").is_visible()
    assert "all-MiniLM-L6-v2" in await internals.inner_text()
    await page.context.close()


async def test_the_tag_filter_ignores_case_and_offers_the_stored_tags(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, DESKTOP)
    await page.wait_for_selector("#stored-tags option", state="attached")  # asked for once the list is shown
    offered = await page.eval_on_selector_all("#stored-tags option", "(options) => options.map((o) => o.value)")
    assert {"Work", "work", "Coffee", "عربي"} <= set(offered)
    assert offered[0] == "notes"  # most used first
    await page.fill("#f-tag", "WORK")
    await page.click(".filters .row button[type=submit]")
    await page.wait_for_url("**tag=WORK*")
    await page.wait_for_selector("text=2 memories")
    rows = " ".join(await page.locator("li.memory .content").all_inner_texts())
    assert "Project Atlas" in rows and "PostgreSQL 16" in rows  # stored as "Work" and as "work"
    tags = await page.locator("li.memory .tag").all_inner_texts()
    assert "Work" in tags and "work" in tags  # shown as stored
    await page.goto(f"{owner_server.base_url}/console/?tag=coffee&q=what+coffee+do+I+like")
    assert "dark roast" in await page.locator("li.memory .content").first.inner_text()
    await page.context.close()


async def test_memory_text_is_marked_for_its_own_direction(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, DESKTOP)
    await page.goto(f"{owner_server.base_url}/console/?tag=عربي")
    row = page.locator("li.memory a.content").first
    assert await row.get_attribute("dir") == "auto"
    assert await row.evaluate("(el) => getComputedStyle(el).direction") == "rtl"
    name = await page.locator("li.memory input[name=ids]").first.get_attribute("aria-label")
    assert name is not None and name.startswith("Select: يفضل الشاي")
    await page.context.close()
