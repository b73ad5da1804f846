"""Personality variants: chosen by VENOM_PERSONALITY, unknown ones fall back loudly, health tells which."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from mcp import Client

from symbiote.config import PROJECT_ROOT, Settings
from symbiote.mcp.personality import available, load_personality
from tests.conftest import InProcess, make_app, make_runtime

DIRECTORY = PROJECT_ROOT / "personalities"


def test_default_and_variant2_are_different_real_prompts() -> None:
    default = load_personality(DIRECTORY, "")
    second = load_personality(DIRECTORY, "variant2")
    assert (default.variant, second.variant) == ("default", "variant2")
    assert default.text != second.text
    for prompt in (default.text, second.text):
        assert "search_memory" in prompt and "store_memory" in prompt
        assert '"we"' in prompt
        assert "symbiote" in prompt.lower()
    assert set(available(DIRECTORY)) >= {"default", "variant2"}


def test_unknown_variant_falls_back_to_default_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        chosen = load_personality(DIRECTORY, "pirate")
    assert chosen.variant == "default" and chosen.requested == "pirate" and chosen.fell_back
    assert "pirate" in caplog.text and "default" in caplog.text


def test_path_tricks_are_not_variants(caplog: pytest.LogCaptureFixture) -> None:
    assert load_personality(DIRECTORY, "../../etc/passwd").variant == "default"


@pytest.mark.parametrize(("requested", "active"), [("variant2", "variant2"), ("no-such-variant", "default")])
async def test_server_serves_and_reports_the_active_variant(
    settings: Settings, requested: str, active: str, caplog: pytest.LogCaptureFixture
) -> None:
    """VENOM_PERSONALITY as the setting it becomes, through the real runtime and app in this process."""
    chosen = Settings.from_env({"VENOM_PERSONALITY": requested})
    with caplog.at_level(logging.WARNING):
        built = make_runtime(dataclasses.replace(settings, personality=chosen.personality))
    served = InProcess(built, make_app(built.settings, runtime=built))
    async with served.http() as http:
        health = (await http.get("/health")).json()
    async with Client(served.server) as client:
        prompt = await client.get_prompt("venom_identity")
    assert health["personality"] == active
    assert prompt.messages[0].content.text == load_personality(DIRECTORY, active).text  # type: ignore[union-attr]
    if active != requested:
        assert "no-such-variant" in caplog.text and any(r.levelname == "WARNING" for r in caplog.records)


def test_every_text_of_the_protocol_lets_the_assistant_judge() -> None:
    """The instructions, both prompts, the tool's and the result's descriptions and a search's message say
    one thing: results, then below_cutoff, are candidates best first; use any that plainly answers the
    question as asked, whatever its score; "never stored" only when none does. None says an offered
    memory is not an answer (what made an assistant say "never stored" with the fact one list down)."""
    from symbiote.mcp.server import INSTRUCTIONS
    from symbiote.memory import SearchHit, SearchResults
    from symbiote.memory.searching import JUDGE

    tool = (PROJECT_ROOT / "symbiote" / "mcp" / "tools.py").read_text()
    search_tool = tool[tool.index('title="Search memory"') : tool.index("async def search_memory")]
    texts = {
        "instructions": INSTRUCTIONS,
        "default prompt": load_personality(DIRECTORY, "").text,
        "variant2 prompt": load_personality(DIRECTORY, "variant2").text,
        "tool description": search_tool,
        "message": JUDGE,
    }
    for name, text in texts.items():
        flat = " ".join(text.replace('"\n', " ").replace('            "', "").split())
        assert "plainly answers the question as asked" in flat, name
        assert "whatever its score" in flat, name
        assert "never stored only when none of them does" in flat, name
    fields = " ".join(
        str(f.description)
        for f in (*SearchHit.model_fields.values(), *SearchResults.model_fields.values())
        if f.description
    )
    for text in (*texts.values(), fields):
        lowered = " ".join(text.lower().split())
        for contradiction in ("not an answer", "never as the answer", "never present one", "unlikely to be relevant"):
            assert contradiction not in lowered
