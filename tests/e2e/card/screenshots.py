"""Photographs the memory card for the docs, by hand (not by the test suite):

    python -m tests.e2e.card.screenshots

writes docs/images/memory-card-dark.png (a store that may replace an older memory),
memory-card-light.png (a search once the owner confirmed it does) and memory-card-phone.png (the same
search at 360 px), from a real `symbiote serve` on a
fresh store in a temporary directory, shown by the test host (tests/e2e/card/host)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from symbiote.config import PROJECT_ROOT
from tests.console.owner_browser import api_key_for, launch, start_server
from tests.e2e.card.conftest import bundle_host, open_host

IMAGES = PROJECT_ROOT / "docs" / "images"
SEED = [
    {"content": "We live in Lisbon, in a flat near the Jardim da Estrela.", "tags": ["home"], "type": "fact"},
    {"content": "Prefers green tea with mint in the evening, never coffee after 16:00.", "tags": ["preferences"]},
    {"content": "Daughter Maya starts piano lessons on Tuesdays at 17:30.", "tags": ["family"], "type": "personal"},
    {"content": "Project Atlas moves billing from Python to Rust; launch planned for March 14.", "tags": ["work"]},
]
MOVE = {"content": "We moved to Porto in October; the new flat is in Bonfim.", "tags": ["home", "move"]}


async def photograph(out: Path, tmp: Path) -> None:
    from playwright.async_api import async_playwright

    server = start_server(tmp / "data")
    try:
        key = api_key_for(server)
        bundle = bundle_host(tmp)
        async with async_playwright() as playwright:
            browser = await launch(playwright)
            try:
                host = await open_host(browser, server, key, bundle, theme="dark")
                await host.show("store_memories", {"memories": SEED}, theme="dark")
                await host.show("store_memory", MOVE, theme="dark")
                await host.card.get_by_role("button", name="It replaces this").first.wait_for()
                await host.page.locator("iframe#card").screenshot(path=str(out / "memory-card-dark.png"))
                await host.card.get_by_role("button", name="It replaces this").first.click()  # Porto first, next
                await host.card.get_by_role("button", name="Undo link").wait_for()
                await host.close()

                host = await open_host(browser, server, key, bundle, viewport={"width": 640, "height": 900})
                await host.show("search_memory", {"query": "where do we live?", "limit": 4})
                await host.page.locator("iframe#card").screenshot(path=str(out / "memory-card-light.png"))
                await host.close()

                host = await open_host(browser, server, key, bundle, viewport={"width": 360, "height": 780})
                await host.show("search_memory", {"query": "where do we live?", "limit": 3})
                await host.page.screenshot(path=str(out / "memory-card-phone.png"), full_page=True)
                await host.close()
            finally:
                await browser.close()
    finally:
        server.stop()


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="card-shots-") as tmp:
        asyncio.run(photograph(IMAGES, Path(tmp)))
    for name in ("light", "dark", "phone"):
        print(IMAGES / f"memory-card-{name}.png")


if __name__ == "__main__":
    main()
