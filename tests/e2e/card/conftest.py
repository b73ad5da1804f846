"""The memory card's browser tests: a real `symbiote serve` with auth on, a test host page (the MCP
TS client and ext-apps' AppBridge, tests/e2e/card/host) bundled here by esbuild from the card's own
node_modules, served on the server's origin by Playwright (so /mcp is same-origin), in Debian's
Chromium. The host and the test's own MCP client each have an API key, so that what one declared
never decides for the other (for stateless requests the server goes by a caller's last initialize,
and the test's client does not declare the apps extension)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from symbiote.config import PROJECT_ROOT
from tests.conftest import ServerProcess
from tests.console.conftest import browser
from tests.console.owner_browser import api_key_for, start_server

__all__ = ["browser"]

CARD_DIR = PROJECT_ROOT / "symbiote" / "mcp" / "card"
CARD_MODULES = CARD_DIR / "node_modules"
ESBUILD = CARD_MODULES / ".bin" / "esbuild"
HOST_DIR = Path(__file__).resolve().parent / "host"
HOST_PATH = "/card-test-host/"  # where the host page is served, on the server's own origin
LIGHT = {"width": 640, "height": 900}
MISSING = "the memory card's toolchain is missing (node, symbiote/mcp/card/node_modules): run scripts/build-card.sh"


def require_toolchain() -> None:
    """Fails with what to run when the card's npm packages (esbuild, ext-apps, the MCP client) are missing."""
    if shutil.which("node") is None or not ESBUILD.exists():
        pytest.fail(MISSING, pytrace=False)


def bundle_host(out_dir: Path) -> Path:
    """host.js bundled with its packages from the card's node_modules (NODE_PATH: the host has none)."""
    require_toolchain()
    out = out_dir / "host.js"
    built = subprocess.run(
        [str(ESBUILD), str(HOST_DIR / "host.js"), "--bundle", "--format=esm", "--platform=browser"]
        + ["--target=es2022", f"--outfile={out}", "--log-level=warning"],
        env={**os.environ, "NODE_PATH": str(CARD_MODULES)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    return out


@pytest.fixture(scope="package")
def host_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundle_host(tmp_path_factory.mktemp("card-host"))


@pytest.fixture(scope="package")
def card_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server with auth on for the card's tests (each test stores what it looks for)."""
    proc = start_server(tmp_path_factory.mktemp("card") / "data")
    yield proc
    proc.stop()


@pytest.fixture(scope="package")
def host_key(card_server: ServerProcess) -> str:
    return api_key_for(card_server)


@pytest.fixture(scope="package")
def client_key(card_server: ServerProcess) -> str:
    return api_key_for(card_server)


@asynccontextmanager
async def own_client(server: ServerProcess, key: str) -> AsyncIterator[Any]:
    """The test's own MCP client (the Python SDK over HTTP), to check what the card changed: entered
    with `async with` in the test itself (anyio's scopes must be left in the task that entered them)."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with Client(streamable_http_client(server.mcp_url, http_client=http)) as client:
            yield client


class Host:
    """The host page in one browser context: `show` runs a tool the way a chat client would."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.card = page.frame_locator("iframe#card")
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    async def show(
        self, name: str, args: dict[str, Any], theme: str | None = None, styles: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The tool's result (as the host got it) once the card holds it and has drawn it."""
        options = {key: value for key, value in (("theme", theme), ("styles", styles)) if value}
        result = await self.page.evaluate("([n, a, o]) => testHost.show(n, a, o)", [name, args, options])
        await self.card.locator("main[aria-busy=false]").wait_for()
        return result

    def frame(self) -> Any:
        """The card's frame (for evaluating in it), which `show` replaces each time."""
        return next(f for f in self.page.frames if f.parent_frame is not None)

    async def close(self) -> None:
        await self.page.evaluate("() => testHost.close()")
        await self.page.context.close()


async def open_host(
    browser: Any,
    server: ServerProcess,
    key: str,
    bundle: Path,
    viewport: dict[str, int] | None = None,
    theme: str = "light",
    **options: Any,
) -> Host:
    """A fresh context on the host page, connected to `server` with `key`."""
    context = await browser.new_context(viewport=viewport or LIGHT, color_scheme=theme, **options)
    try:
        return await _connected(context, server, key, bundle, theme)
    except BaseException:
        await context.close()  # a host that did not connect leaves no context open
        raise


async def _connected(context: Any, server: ServerProcess, key: str, bundle: Path, theme: str) -> Host:
    page = await context.new_page()
    page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
    files = {"": (HOST_DIR / "index.html", "text/html"), "host.js": (bundle, "text/javascript")}

    async def serve(route: Any) -> None:
        name = route.request.url.split(HOST_PATH, 1)[1].split("?", 1)[0]
        if name not in files:
            await route.fulfill(status=404, body="not here")
            return
        path, kind = files[name]
        await route.fulfill(status=200, body=path.read_bytes(), headers={"content-type": f"{kind}; charset=utf-8"})

    await page.route(f"{server.base_url}{HOST_PATH}**", serve)
    await page.goto(f"{server.base_url}{HOST_PATH}")
    await page.wait_for_function("() => window.testHost !== undefined")
    await page.evaluate("([key, theme]) => { testHost.setTheme(theme); return testHost.connect(key); }", [key, theme])
    return Host(page)
