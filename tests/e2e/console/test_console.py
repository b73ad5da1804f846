"""The owner's console in a real browser (Debian's Chromium driven by Playwright) against a real
`symbiote serve` with auth on, checked through a real MCP client; and its security rules over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.auth.support import OWNER_SECRET, bearer_client, oauth_env
from tests.conftest import ServerProcess, make_app
from tests.console.owner_browser import api_key_for, signed_in_page

BROWSER = pytest.mark.server("a browser: the console's pages are loaded from a real server")

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> likes <b>bold</b> tea'
HOSTILE_TAG = "<img src=x onerror=window.__pwned=3>"
SEED = [
    {
        "content": "Prefers dark roast coffee, no sugar, and an oat-milk flat white on Fridays.",
        "tags": ["preferences", "coffee"],
        "type": "preference",
    },
    {
        "content": "Project Atlas moves the billing service from Python to Rust; launch planned for March 14.",
        "tags": ["work", "atlas"],
        "type": "project",
    },
    {
        "content": "Decided to use PostgreSQL 16 with logical replication for Atlas instead of MySQL.",
        "tags": ["work", "atlas", "database"],
        "type": "decision",
    },
    {
        "content": "Daughter Maya starts piano lessons on Tuesdays at 17:30 with Mrs. Okafor.",
        "tags": ["family"],
        "type": "personal",
    },
    {"content": "Allergic to penicillin; carries an EpiPen when hiking.", "tags": ["health"], "type": "fact"},
    {"content": "Runs the Berlin half marathon every April; personal best 1:42:10.", "tags": ["sport"], "type": "fact"},
]


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("console") / "data", env=oauth_env()).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def api_key(console_server: ServerProcess) -> str:
    return api_key_for(console_server)


@pytest_asyncio.fixture(scope="module")
async def seeded(console_server: ServerProcess, api_key: str) -> dict[str, str]:
    """The seed memories stored through MCP, by content."""
    async with bearer_client(console_server.mcp_url, api_key) as mcp:
        result = await mcp.call_tool(
            "store_memories", {"memories": [*SEED, {"content": HOSTILE, "tags": [HOSTILE_TAG]}]}
        )
    assert not result.is_error, result.content
    contents = [item["content"] for item in [*SEED, {"content": HOSTILE}]]
    return {text: r["memory_id"] for text, r in zip(contents, result.structured_content["results"])}


@BROWSER
async def test_owner_signs_in_searches_edits_and_deletes_and_mcp_sees_it(
    browser: Any, console_server: ServerProcess, seeded: dict[str, str], api_key: str
) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(f"{console_server.base_url}/console/")
    assert page.url.endswith("/console/signin")  # auth is on: no session, no console
    await page.fill("#secret", "not the owner secret at all")
    await page.click("button[type=submit]")
    assert "not the owner secret" in await page.inner_text(".error")
    await page.fill("#secret", OWNER_SECRET)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{console_server.base_url}/console/")
    assert "7 memories" in await page.inner_text(".toolbar .count")
    rows = await page.locator("li.memory .content").all_inner_texts()
    assert rows[0].startswith("<script>") and rows[-1].startswith("Prefers dark roast")  # newest first

    # Search: the tools' hybrid search, with each result's relevance and why it matched.
    await page.fill("#q", "which database did we pick for Atlas?")
    await page.press("#q", "Enter")
    await page.wait_for_selector("li.memory .score")
    first = page.locator("li.memory").first
    assert "PostgreSQL 16" in await first.locator(".content").inner_text()
    assert int(await first.locator(".score").inner_text()) >= 50
    assert await first.locator(".why").inner_text() in ("keyword + meaning", "meaning", "keyword")

    # Edit the memory: new text and tags, re-embedded.
    edited_id = seeded[SEED[2]["content"]]
    await first.locator(".content").click()
    await page.wait_for_url(f"**/console/memories/{edited_id}")
    await page.fill("#content", "Decided to use CockroachDB for Atlas after the load test in May.")
    await page.fill("#tags", "work, atlas, cockroachdb")
    await page.click("form.edit button[type=submit]")
    await page.wait_for_url("**saved=reindexed")
    assert "embedded and indexed again" in await page.inner_text(".done")

    # Delete one from the list, after the confirmation page.
    doomed_id = seeded[SEED[5]["content"]]
    await page.goto(f"{console_server.base_url}/console/")
    await page.check(f"input[name=ids][value={doomed_id}]")
    await page.click("text=Delete selected…")
    await page.wait_for_selector("#confirm-delete")
    assert "Berlin half marathon" in await page.inner_text("main")
    await page.click("#confirm-delete")
    await page.wait_for_url("**/console/?deleted=1&undo=*")  # with an undo: tests/console/test_trash_pages.py
    assert "Deleted 1 memory" in await page.inner_text(".done")
    assert "6 memories" in await page.inner_text(".toolbar .count")

    # What an assistant sees through MCP now.
    async with bearer_client(console_server.mcp_url, api_key) as mcp:
        fetched = await mcp.call_tool("get_memory", {"memory_id": edited_id})
        found = await mcp.call_tool("search_memory", {"query": "which database did we choose for Atlas?"})
        gone = await mcp.call_tool("get_memory", {"memory_id": doomed_id})
    assert fetched.structured_content["content"].startswith("Decided to use CockroachDB")
    assert fetched.structured_content["tags"] == ["work", "atlas", "cockroachdb"]
    assert fetched.structured_content["updated_at"]
    assert found.structured_content["results"][0]["memory_id"] == edited_id
    assert gone.is_error
    await context.close()


@BROWSER
async def test_weaker_matches_are_shown_on_request_for_one_search(
    browser: Any, console_server: ServerProcess, seeded: dict[str, str]
) -> None:
    page = await signed_in_page(browser, console_server)
    await page.fill("#q", "how do volcanoes form under the ocean floor")  # nothing stored is about it
    await page.press("#q", "Enter")
    await page.wait_for_selector("p.weaker")
    assert await page.locator("li.memory").count() == 0
    assert "No stored memory is relevant" in await page.inner_text("#results")
    await page.click("text=Show weaker matches")
    await page.wait_for_url("**weaker=1**")
    scores = [int(text) for text in await page.locator("li.memory .score").all_inner_texts()]
    assert scores and all(score < 30 for score in scores)  # what the cut-off hid, best first
    assert scores == sorted(scores, reverse=True)
    assert "Showing weaker matches too" in await page.inner_text("p.weaker")
    await page.fill("#q", "which database did we pick for Atlas?")  # a new search: the default cut-off again
    await page.press("#q", "Enter")
    await page.wait_for_url(lambda url: "weaker" not in url and "Atlas" in url)
    await page.wait_for_selector("text=Show weaker matches")
    assert all(int(text) >= 30 for text in await page.locator("li.memory .score").all_inner_texts())
    await page.context.close()


@BROWSER
async def test_stored_html_and_script_are_shown_as_text(
    browser: Any, console_server: ServerProcess, seeded: dict[str, str]
) -> None:
    page = await signed_in_page(browser, console_server)
    hostile_id = seeded[HOSTILE]
    for path in ("/console/", f"/console/memories/{hostile_id}", "/console/?q=who+likes+bold+tea", "/console/stats"):
        await page.goto(f"{console_server.base_url}{path}")
        await page.wait_for_load_state("networkidle")
        assert await page.evaluate("window.__pwned") is None, path
        assert await page.locator("main img").count() == 0 and await page.locator("main b").count() == 0
    await page.goto(f"{console_server.base_url}/console/memories/{hostile_id}")
    assert await page.input_value("#content") == HOSTILE  # the text itself, to edit as text
    await page.goto(f"{console_server.base_url}/console/")
    assert "<script>window.__pwned = 1</script>" in await page.inner_text("main")
    assert HOSTILE_TAG in await page.locator(".tag").all_inner_texts()
    html = await (await page.context.request.get(f"{console_server.base_url}/console/")).text()
    assert "&lt;script&gt;window.__pwned" in html and "<script>window.__pwned" not in html
    assert "&lt;img src=x onerror=window.__pwned=3&gt;" in html
    await page.context.close()


@BROWSER
async def test_import_with_progress_and_export_download_in_the_browser(
    browser: Any, console_server: ServerProcess, seeded: dict[str, str], tmp_path: Path
) -> None:
    lines = [json.dumps({"format": "symbiote-memories", "version": 1, "model": "all-MiniLM-L6-v2", "dimension": 384})]
    lines += [
        json.dumps(
            {
                "kind": "memory",
                "content": f"Imported note {i}: the greenhouse needs watering on day {i}.",
                "tags": ["garden"],
                "created": f"2025-06-{i + 1:02d}T08:00:00Z",
            }
        )
        for i in range(20)
    ]
    lines.insert(5, "{this is not json")
    lines += [
        json.dumps(
            {
                "kind": "turn",
                "conversation_id": "garden-chat",
                "turn_index": i,
                "role": role,
                "text": text,
                "ts": f"2025-06-30T09:0{i}:00Z",
            }
        )
        for i, (role, text) in enumerate([("user", "When do I water the greenhouse?"), ("assistant", "Every morning.")])
    ]
    upload = tmp_path / "notes.jsonl"
    upload.write_text("\n".join(lines) + "\n")
    page = await signed_in_page(browser, console_server)
    await page.goto(f"{console_server.base_url}/console/transfer")
    await page.set_input_files("#import-file", str(upload))
    await page.click("#import-form button[type=submit]")
    await page.wait_for_selector("#import-status[data-state=done]", timeout=60_000)
    assert await page.inner_text("#count-added") == "20"
    assert await page.inner_text("#count-refused") == "1"
    assert "line 6: not valid JSON" in await page.inner_text(".refused")
    await page.goto(f"{console_server.base_url}/console/history")
    await page.click("text=garden-chat")
    assert [t.split("\n")[-1] for t in await page.locator(".turn").all_inner_texts()] == [
        "When do I water the greenhouse?",
        "Every morning.",
    ]

    # The same file again adds nothing.
    await page.goto(f"{console_server.base_url}/console/transfer")
    await page.set_input_files("#import-file", str(upload))
    await page.click("#import-form button[type=submit]")
    await page.wait_for_selector("#import-status[data-state=done]", timeout=60_000)
    assert await page.inner_text("#count-added") == "0" and await page.inner_text("#count-unchanged") == "20"

    async with page.expect_download() as waiting:
        await page.click("form.export button[type=submit]")
    download = await waiting.value
    exported = (await download.path()).read_text().splitlines()
    header = json.loads(exported[0])
    assert header["format"] == "symbiote-memories" and header["counts"]["memories"] == len(exported) - 1
    assert any("greenhouse needs watering on day 7" in line for line in exported)
    await page.context.close()


@BROWSER
async def test_the_console_fits_a_phone_screen(
    browser: Any, console_server: ServerProcess, seeded: dict[str, str]
) -> None:
    page = await signed_in_page(browser, console_server, viewport={"width": 390, "height": 844}, is_mobile=True)
    one = seeded[SEED[0]["content"]]
    for path in ("/console/", "/console/stats", "/console/history", "/console/transfer", f"/console/memories/{one}"):
        await page.goto(f"{console_server.base_url}{path}")
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390, path
    await page.context.close()


async def test_a_bearer_token_does_not_open_the_console_and_writes_need_the_csrf_token(
    tmp_path: Path, model_dir: Path
) -> None:
    """The console's routes answer in this process (the app on loopback, auth on): no browser and no
    wire is the point, only what each request gets."""
    from symbiote.auth import AuthStore, default_auth_db
    from symbiote.config import Settings
    from symbiote.memory import StoreRequest

    data = tmp_path / "data"
    data.mkdir()
    keys = AuthStore(default_auth_db(data))
    _key, api_key = keys.create_api_key("console test")
    keys.close()
    settings = Settings(
        chromadb_path=data, model_dir=model_dir, store_process=False, auth_mode="oauth", owner_secret=OWNER_SECRET
    )
    app = make_app(settings, warm_up=False)
    memory_id = (await app.state.runtime.engine.store(StoreRequest(**SEED[0]))).memory_id
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30) as http:
        bearer = await http.get("/console/", headers={"Authorization": f"Bearer {api_key}"})
        assert bearer.headers["location"] == "/console/signin"
        assert (await http.post("/console/delete", data={"ids": memory_id, "confirm": "yes"})).status_code == 401
        assert (await http.get("/console/", headers={"Host": "evil.example"})).status_code == 421
        signed = await http.post("/console/signin", data={"secret": OWNER_SECRET})
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
        assert "Max-Age=43200" in cookie and "Secure" not in cookie  # loopback: no TLS to require
        target = {"ids": memory_id, "confirm": "yes"}
        assert (await http.post("/console/delete", data=target)).status_code == 403  # no CSRF token
        assert (await http.post("/console/delete", data={**target, "csrf": "forged"})).status_code == 403
        page = (await http.get("/console/")).text
        token = page.split('name="csrf-token" content="')[1].split('"')[0]
        cross = await http.post(
            "/console/delete", data={**target, "csrf": token}, headers={"Origin": "http://evil.example"}
        )
        assert cross.status_code == 403
        cross_site = await http.post(
            "/console/delete", data={**target, "csrf": token}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert cross_site.status_code == 403
        assert (await http.get(f"/console/memories/{memory_id}")).status_code == 200  # nothing was deleted
        assert (await http.post("/console/signout", data={"csrf": token})).status_code == 303
        assert (await http.get("/console/")).headers["location"] == "/console/signin"
    app.state.runtime.close()


async def test_behind_https_the_cookie_is_secure_and_wrong_secrets_are_throttled(
    tmp_path: Path, model_dir: Path
) -> None:
    from symbiote.config import Settings

    settings = Settings(
        chromadb_path=tmp_path / "data",
        model_dir=model_dir,
        store_process=False,
        auth_mode="oauth",
        owner_secret=OWNER_SECRET,
        public_url="https://memory.example.com",
    )
    app = make_app(settings, warm_up=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://memory.example.com") as http:
        signed = await http.post("/console/signin", data={"secret": OWNER_SECRET})
        assert signed.status_code == 303 and "; Secure" in signed.headers["set-cookie"]
        page = (await http.get("/console/transfer")).text
        token = {"X-CSRF-Token": page.split('name="csrf-token" content="')[1].split('"')[0]}
        job = (await http.post("/console/import", headers=token)).json()["job"]
        part = await http.post(f"/console/import/{job}/part", content=b"x" * 100_000, headers=token)
        assert part.status_code == 200  # over the 16 KB for strangers: the session was checked first
        huge = await http.post(
            f"/console/import/{job}/part", content=b"x" * (settings.max_body_bytes + 1), headers=token
        )
        assert huge.status_code == 413  # SYMBIOTE_MAX_BODY_BYTES still holds
        http.cookies.clear()
        stranger = await http.post(f"/console/import/{job}/part", content=b"x" * 100_000, headers=token)
        assert stranger.status_code == 401  # refused before its body is read
        statuses = [
            (await http.post("/console/signin", data={"secret": f"wrong guess {i}"})).status_code for i in range(6)
        ]
        assert statuses == [401] * 5 + [429]  # the consent page's limiter: 5 free guesses, then backoff
        assert (await http.post("/console/signin", data={"secret": OWNER_SECRET})).status_code == 429
    app.state.runtime.close()
