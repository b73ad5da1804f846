"""WCAG 2.2 AA on every console page, checked by axe-core (pinned, installed by scripts/setup.sh
dev into .venv-tools/axe) injected into the real Chromium page, at desktop and phone sizes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from symbiote.config import PROJECT_ROOT
from tests.conftest import ServerProcess
from tests.console.conftest import SIZES, open_page, screenshot

pytestmark = pytest.mark.server("a browser: the console's pages are loaded from a real server")

AXE = PROJECT_ROOT / ".venv-tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


async def violations(page: Any) -> list[dict[str, Any]]:
    """axe's violations of the WCAG A/AA tags on the page as it is now."""
    assert AXE.exists(), "axe-core is missing: run scripts/setup.sh dev"
    await page.add_script_tag(path=str(AXE))
    found = await page.evaluate("(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}})", TAGS)
    return [
        {"id": v["id"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"]][:5]} for v in found["violations"]
    ]


async def assert_accessible(page: Any, where: str) -> None:
    found = await violations(page)
    assert not found, f"{where}: " + json.dumps(found, ensure_ascii=False, indent=1)


async def _memory_id(page: Any) -> str:
    href = await page.locator("li.memory a.content").first.get_attribute("href")
    return str(href).rsplit("/", 1)[-1]


async def visit_every_page(page: Any, base: str, size: str) -> None:
    """Each page of a signed-in owner, checked in turn (and photographed when asked)."""
    await assert_accessible(page, "list")
    await screenshot(page, f"list-{size}")
    memory_id = await _memory_id(page)
    pages = {
        "search": f"{base}/console/?q=which+database+did+we+pick+for+Atlas",
        "filtered": f"{base}/console/?tag=WORK",
        "detail": f"{base}/console/memories/{memory_id}",
        "stats": f"{base}/console/stats",
        "history": f"{base}/console/history",
        "history-search": f"{base}/console/history?q=when+do+we+fly+to+Lisbon",
        "conversation": f"{base}/console/history?conversation=garden",
        "transfer": f"{base}/console/transfer",
        "problem": f"{base}/console/memories/mem_1",
        "new": f"{base}/console/new",
        "links": f"{base}/console/links",
    }
    for name, url in pages.items():
        await page.goto(url)
        await assert_accessible(page, name)
        await screenshot(page, f"{name}-{size}")
    # The confirmation pages: deleting a selection of memories, and a conversation's history.
    await page.goto(f"{base}/console/")
    await page.locator("li.memory input[name=ids]").nth(1).check()
    await page.click("form.selection button.danger")
    await page.wait_for_selector("#confirm-delete")
    await assert_accessible(page, "confirm delete")
    await screenshot(page, f"confirm-delete-{size}")
    await page.click("#confirm-delete")
    await page.wait_for_selector("#undo-delete")
    await assert_accessible(page, "after a delete, with its undo")
    await page.goto(f"{base}/console/trash")
    await assert_accessible(page, "trash")
    await screenshot(page, f"trash-{size}")
    await page.locator("input[name=ids]").first.check()
    await page.click("#restore-selected")  # the next size finds every memory again
    await page.goto(f"{base}/console/history?conversation=garden")
    await page.click("form.delete-one button.danger")
    await page.wait_for_selector("#confirm-delete")
    await assert_accessible(page, "confirm history delete")
    await screenshot(page, f"confirm-history-{size}")


@pytest.mark.parametrize("size", sorted(SIZES))
async def test_every_signed_in_page_passes_axe(
    browser: Any, owner_server: ServerProcess, stored: dict[str, str], size: str
) -> None:
    context = await browser.new_context(viewport=SIZES[size], bypass_csp=True)
    page = await context.new_page()
    await page.goto(f"{owner_server.base_url}/console/")
    assert page.url.endswith("/console/signin")
    await assert_accessible(page, "sign-in")
    await screenshot(page, f"signin-{size}")
    await context.close()
    page = await open_page(browser, owner_server, SIZES[size])
    await visit_every_page(page, owner_server.base_url, size)
    await page.context.close()


@pytest.mark.parametrize("size", sorted(SIZES))
async def test_the_empty_console_passes_axe(browser: Any, empty_server: ServerProcess, size: str) -> None:
    page = await open_page(browser, empty_server, SIZES[size], sign_in=False)
    await assert_accessible(page, "empty list")
    await screenshot(page, f"empty-{size}")
    await page.context.close()


async def test_axe_finds_what_the_old_console_had(browser: Any) -> None:
    """The check itself runs: a field without a name and faint text (the old borders' 1.29:1) are found."""
    page = await browser.new_page()
    await page.set_content(
        '<!doctype html><html lang="en"><title>t</title><main><input name="tag">'
        '<p style="color:#dfe3e6">faint</p></main></html>'
    )
    assert {v["id"] for v in await violations(page)} >= {"label", "color-contrast"}
    await page.close()
