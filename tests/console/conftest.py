"""The console's browser tests: one signed-in server with an owner's memories and conversations,
one empty server, and Debian's Chromium through Playwright (never Playwright's own download)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.auth.support import OWNER_SECRET, bearer_client, oauth_env
from tests.conftest import ServerProcess
from tests.console.owner_browser import api_key_for, launch, start_server

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SIZES = {"desktop": DESKTOP, "phone": PHONE}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

TOPICS = [
    (
        "Prefers dark roast coffee, no sugar, and an oat-milk flat white on Fridays.",
        ["Coffee", "preferences"],
        "preference",
    ),
    (
        "Project Atlas moves the billing service from Python to Rust; launch planned for March 14.",
        ["Work", "atlas"],
        "project",
    ),
    (
        "Decided to use PostgreSQL 16 with logical replication for Atlas instead of MySQL.",
        ["work", "database"],
        "decision",
    ),
    ("Daughter Maya starts piano lessons on Tuesdays at 17:30 with Mrs. Okafor.", ["family"], "personal"),
    ("Allergic to penicillin; carries an EpiPen when hiking in the Alps.", ["health"], "fact"),
    ("يفضل الشاي الأخضر بالنعناع في المساء، ويكتب ملاحظاته بالعربية.", ["عربي", "preferences"], "preference"),
]
FILLER = [
    "Reads a chapter of a history book before sleeping; currently on the late Roman republic and its politics.",
    "Keeps the team's weekly planning on Monday at 10:00 and writes the notes in the shared folder afterwards.",
    "Cycles to the office when it is dry; the route along the canal takes about twenty-five minutes each way.",
    "Likes board games with friends on Saturdays; the current favourite is a cooperative game about trains.",
]


def owner_memories(count: int) -> list[dict[str, Any]]:
    """`count` memories of an owner: filler first, then the topics above (mixed-case tags, Arabic),
    so the newest, at the top of the list, are the topics."""
    filler = [
        {"content": f"{FILLER[n % len(FILLER)]} (note {n})", "tags": ["notes"]} for n in range(count - len(TOPICS))
    ]
    return [*filler, *({"content": text, "tags": tags, "type": kind} for text, tags, kind in TOPICS)]


@pytest.fixture(scope="package")
def owner_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with auth on (the console needs the owner secret)."""
    proc = ServerProcess(tmp_path_factory.mktemp("console-owner") / "data", env=oauth_env()).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with auth on for the modules whose tests change what is stored (edits, imports): each
    test looks only at its own texts, tags and imports, or at counts before and after it."""
    proc = start_server(tmp_path_factory.mktemp("console-changed") / "data")
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A new server on loopback without auth: nothing stored yet. A module's (one module uses it): held
    for the package beside its other servers, it made the suite's fourth process at once (3.2 GB)."""
    proc = ServerProcess(tmp_path_factory.mktemp("console-empty") / "data").start()
    yield proc
    proc.stop()


@pytest.fixture(scope="package")
def api_key(owner_server: ServerProcess) -> str:
    return api_key_for(owner_server)


@pytest_asyncio.fixture(scope="package")
async def stored(owner_server: ServerProcess, api_key: str) -> dict[str, str]:
    """60 memories and two conversations stored through MCP, as an assistant would: ids by content."""
    items = owner_memories(60)
    async with bearer_client(owner_server.mcp_url, api_key) as mcp:
        result = await mcp.call_tool("store_memories", {"memories": items})
        assert not result.is_error, result.content
        for cid, turns in CONVERSATIONS.items():
            for role, text in turns:
                said = await mcp.call_tool("append_history", {"conversation_id": cid, "role": role, "text": text})
                assert not said.is_error, said.content
    return {item["content"]: r["memory_id"] for item, r in zip(items, result.structured_content["results"])}


CONVERSATIONS = {
    "trip-planning": [
        ("user", "We are flying to Lisbon on the 3rd of May and staying in Alfama for a week."),
        ("assistant", "Alfama is lovely; the tram 28 passes close by. Shall I note the dates?"),
    ],
    "garden": [
        ("user", "The tomatoes on the balcony need watering every evening in July."),
        ("assistant", "Noted: water the balcony tomatoes each evening during July."),
    ],
}


@pytest_asyncio.fixture(scope="package")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await launch(playwright)
        yield launched
        await launched.close()


async def open_page(browser: Any, server: ServerProcess, size: dict[str, int], sign_in: bool = True) -> Any:
    """A fresh context at `size` (CSP bypassed so axe can be injected), signed in when auth is on."""
    context = await browser.new_context(viewport=size, bypass_csp=True, accept_downloads=True)
    page = await context.new_page()
    page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
    await page.goto(f"{server.base_url}/console/")
    if sign_in and page.url.endswith("/console/signin"):
        await page.fill("#secret", OWNER_SECRET)
        await page.click("button[type=submit]")
        await page.wait_for_url(f"{server.base_url}/console/")
    return page


async def screenshot(page: Any, name: str) -> None:
    """docs/screenshots/<name>.png, only when SYMBIOTE_SCREENSHOTS=1 (so a test run leaves the tree clean)."""
    if os.environ.get("SYMBIOTE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
