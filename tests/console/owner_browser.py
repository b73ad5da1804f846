"""What the console's browser tests share: a `symbiote serve` with auth on, an API key for its MCP
client, Debian's Chromium through Playwright, and a page signed in with the owner secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.auth.support import OWNER_SECRET, oauth_env
from tests.conftest import MODEL_DIR, ServerProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def start_server(data_dir: Path) -> ServerProcess:
    return ServerProcess(data_dir, env=oauth_env()).start()


def api_key_for(server: ServerProcess) -> str:
    env = {**os.environ, "CHROMADB_PATH": str(server.data_dir), "SYMBIOTE_MODEL_DIR": str(MODEL_DIR), **oauth_env()}
    created = subprocess.run(
        [sys.executable, "-m", "symbiote", "keys", "create", "console test"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    return next(word for word in created.stdout.split() if word.startswith("sym_key_"))


async def launch(playwright: Any) -> Any:
    assert Path(CHROMIUM).exists(), "Chromium is missing: scripts/setup.sh dev installs it (apt-get install chromium)"
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


async def signed_in_page(browser: Any, server: ServerProcess, **options: Any) -> Any:
    """A fresh browser context, signed in with the owner secret."""
    context = await browser.new_context(accept_downloads=True, **options)
    page = await context.new_page()
    page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
    await page.goto(f"{server.base_url}/console/")
    assert page.url.endswith("/console/signin")
    await page.fill("#secret", OWNER_SECRET)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{server.base_url}/console/")
    return page
