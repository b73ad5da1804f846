"""The list on a phone (390x844): the search box and the first memories fill the first screen, the
other filters folded behind one control; every target a finger taps is at least 24x24 px (WCAG 2.5.8)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ServerProcess
from tests.console.conftest import DESKTOP, PHONE, open_page

pytestmark = pytest.mark.server("a browser: the console's pages are loaded from a real server")

TARGETS = "a[href], button, input:not([type=hidden]), summary, select, textarea"


async def small_targets(page: Any) -> list[str]:
    """Visible targets under 24x24 px, described; the skip link (off-screen until focused) aside."""
    found = await page.evaluate(
        """(selector) => Array.from(document.querySelectorAll(selector)).filter((el) => {
            const box = el.getBoundingClientRect();
            const shown = box.width > 0 && box.height > 0 && box.bottom > 0 && getComputedStyle(el).visibility !== "hidden";
            return shown && (box.width < 24 || box.height < 24);
        }).map((el) => {
            const box = el.getBoundingClientRect();
            return `${el.tagName.toLowerCase()}.${el.className} "${(el.textContent || el.value || "").trim().slice(0, 30)}" ${box.width.toFixed(1)}x${box.height.toFixed(1)}`;
        })""",
        TARGETS,
    )
    return list(found)


async def test_the_first_screen_of_a_phone_shows_the_search_and_the_memories(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, PHONE)
    search = await page.locator("#q").bounding_box()
    assert search is not None and search["y"] + search["height"] <= PHONE["height"] / 2
    tops = [box["y"] for box in [await row.bounding_box() for row in await page.locator("li.memory").all()] if box]
    assert tops[0] <= 300, f"the first memory starts {tops[0]:.0f} px down"
    visible = [top for top in tops if top < PHONE["height"]]
    print(
        f"phone: search box ends {search['y'] + search['height']:.0f} px, first memory at {tops[0]:.0f} px, "
        f"{len(visible)} memories start on the first screen"
    )
    assert len(visible) >= 3, f"{len(visible)} memories start on the first screen"
    # The other filters are folded behind one control, and open on a tap.
    assert not await page.locator("#f-tag").is_visible()
    await page.click(".filters summary")
    assert await page.locator("#f-tag").is_visible()
    await page.context.close()


async def test_a_set_filter_is_shown_unfolded_on_a_phone(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, PHONE)
    await page.goto(f"{owner_server.base_url}/console/?tag=work")
    assert await page.locator("#f-tag").is_visible()
    assert "1 set" in await page.inner_text(".filters summary")
    await page.context.close()


async def test_desktop_shows_every_filter_without_a_control(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    page = await open_page(browser, owner_server, DESKTOP)
    assert await page.locator("#f-tag").is_visible() and await page.locator("#f-to").is_visible()
    assert not await page.locator(".filters summary").is_visible()
    await page.context.close()


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
async def test_every_target_is_at_least_24_px(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str], size: dict[str, int]
) -> None:
    page = await open_page(browser, owner_server, size)
    base = owner_server.base_url
    memory = str(await page.locator("li.memory a.content").first.get_attribute("href"))
    for path in [
        "/console/",
        "/console/?q=coffee",
        memory,
        "/console/stats",
        "/console/history?q=Lisbon",
        "/console/history?conversation=garden",
        "/console/transfer",
    ]:
        await page.goto(base + path)
        await page.evaluate("document.querySelectorAll('details').forEach((d) => d.open = true)")
        assert not await small_targets(page), f"{path} at {size['width']} px: {await small_targets(page)}"
    await page.context.close()


async def test_the_older_page_is_three_keys_away(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str]
) -> None:
    """Skip links: Tab, Tab, Enter reaches the pages; Tab then reaches "Older" (it was 120 Tabs)."""
    page = await open_page(browser, owner_server, DESKTOP)
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to the content"
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await page.keyboard.press("Tab")
    assert (await page.evaluate("document.activeElement.textContent")).startswith("Older")
    await page.context.close()
