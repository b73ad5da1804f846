"""WCAG 2.2 AA in the memory card, light and dark, checked by axe-core (pinned, in .venv-tools/axe) run
inside the card's frame in the test host: a store with its offers, the edit form, a forgotten memory,
a search with its cut-off. Serious and critical findings fail."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ServerProcess
from tests.e2e.card.conftest import Host, open_host
from tests.e2e.console.test_accessibility import AXE, TAGS

pytestmark = pytest.mark.server("a browser: the card in its host page is loaded from a real server")


async def assert_accessible(host: Host, where: str) -> None:
    assert AXE.exists(), "axe-core is missing: run scripts/setup.sh dev"
    frame = host.frame()
    # Evaluated by the DevTools protocol, which the card's own policy (a <meta>, that bypass_csp does
    # not lift in a srcdoc frame) does not cover: a script tag would be refused.
    await frame.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
    found = await frame.evaluate("(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}})", TAGS)
    bad = [
        {"id": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in found["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert not bad, f"{where}: " + json.dumps(bad, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("theme", ["light", "dark"])
async def test_the_card_passes_axe(
    browser: Any, card_server: ServerProcess, host_key: str, host_bundle: Path, theme: str
) -> None:
    host = await open_host(browser, card_server, host_key, host_bundle, theme=theme)
    try:
        ref = uuid.uuid4().hex[:6]
        await host.show("store_memory", {"content": f"The spare bedroom is painted sage green ({ref})"})
        stored = await host.show(
            "store_memory", {"content": f"The spare bedroom is painted pale blue now ({ref})", "tags": ["home"]}
        )
        assert await host.frame().evaluate("() => document.documentElement.dataset.theme") == theme
        await assert_accessible(host, f"store ({stored['structuredContent'].get('may_replace') and 'with offers'})")
        await host.card.get_by_role("button", name="Edit").click()
        await assert_accessible(host, "edit form")
        await host.card.get_by_role("button", name="Cancel").click()
        await host.card.get_by_role("button", name="Forget", exact=True).click()
        await host.card.get_by_role("button", name="Undo forget").wait_for()
        await assert_accessible(host, "forgotten, with its undo")
        await host.card.get_by_role("button", name="Undo forget").click()
        await host.card.get_by_role("button", name="Forget", exact=True).wait_for()
        await host.show("search_memory", {"query": "what colour is the spare bedroom?", "limit": 5})
        await assert_accessible(host, "search")
        await host.show("store_memory", {"content": " "})
        await assert_accessible(host, "tool error")
    finally:
        await host.close()
