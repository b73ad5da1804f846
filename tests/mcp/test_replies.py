"""Replies an assistant can afford: the memories' texts in a reply share one budget, a long memory is shown
by the part that matched with its whole length, and get_memory gives the whole in parts. Through the
SDK's in-memory client over the real server, model and Chroma."""

from __future__ import annotations

import json
import random
from typing import Any

from mcp import Client

from symbiote.mcp.replies import CONTENT_BYTES, part
from tests.conftest import InProcess

PLAN = "For the allotment we planned to grow San Marzano tomatoes in the south bed, staked, from May."
TOPICS = ["budget review", "office move", "hiring plan", "quarterly goals", "vendor contracts", "travel policy"]


def long_note(rng: random.Random, index: int, with_plan: bool) -> str:
    """A meeting note of about 17,000 characters, like an owner who keeps whole documents."""
    topic = TOPICS[index % len(TOPICS)]
    lines = [f"Meeting notes {index}: {topic}."]
    while sum(len(line) + 1 for line in lines) < 17_000:
        a, b = rng.sample(TOPICS, 2)
        lines.append(f"Item {len(lines)}: the team discussed {a} and agreed to revisit {b} next week.")
        if with_plan and len(lines) == 120:
            lines.append(PLAN)
    return "\n".join(lines)


def tokens(text: str) -> int:
    """An estimate no tokenizer undercuts by much: three UTF-8 bytes a token (English runs near four)."""
    return len(text.encode()) // 3


async def call(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error and result.structured_content is not None, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return result.structured_content, text


async def test_a_search_over_long_notes_shows_the_part_that_matched_within_the_budget(in_process: InProcess) -> None:
    rng = random.Random(7)
    notes = [long_note(rng, index, with_plan=index == 3) for index in range(8)]
    query = "what did we plan for the tomatoes in the allotment?"
    async with Client(in_process.server) as client:
        stored = [(await call(client, "store_memory", content=note))[0]["memory_id"] for note in notes]
        for limit in (5, 20):
            found, text = await call(client, "search_memory", query=query, limit=limit)
            assert tokens(text) <= 10_000, (limit, len(text))
            shown = [*found["results"], *found.get("below_cutoff", [])]
            assert all(hit["content_chars"] == len(notes[stored.index(hit["memory_id"])]) for hit in shown)
            (planned,) = [hit for hit in shown if hit["memory_id"] == stored[3]]
            assert PLAN in planned["content"], planned["content"][:300]
        # What the search finds, and how it scores it, is the engine's: only the texts are cut.
        from symbiote.memory import SearchRequest

        engine = await in_process.engine.search(SearchRequest(query=query, limit=20))
        assert [(h["memory_id"], h["relevance_score"]) for h in found["results"]] == [
            (h.memory_id, h.relevance_score) for h in engine.results
        ]
        # get_memory gives the whole, in parts that join to exactly what was stored.
        whole, offset = "", 0
        while True:
            got, text = await call(client, "get_memory", memory_id=stored[3], offset=offset)
            assert tokens(text) <= 10_000
            whole += got["content"]
            if "next_offset" not in got:
                break
            offset = got["next_offset"]
        assert whole == notes[3]
        listed, text = await call(client, "list_memories", limit=50)
        assert tokens(text) <= 10_000 and all("content_chars" in memory for memory in listed["memories"])
        many, text = await call(client, "get_memories", memory_ids=stored)
        assert tokens(text) <= 10_000 and many["found"] == 8


async def test_short_memories_are_sent_whole_and_unmarked(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        await call(client, "store_memory", content="My bike is blue and I ride it to work.")
        found, _text = await call(client, "search_memory", query="what colour is my bike?")
    (hit,) = found["results"]
    assert hit["content"] == "My bike is blue and I ride it to work." and "content_chars" not in hit


def test_a_part_is_whole_sentences_within_the_budget_in_any_script() -> None:
    text = ("会议记录，讨论预算。" * 400) + "我们计划在五月种番茄。" + ("其他事项。" * 300)
    cut = part(text, "番茄", 600)
    assert len(cut.encode()) <= 600 + 8 and cut.startswith("… ")
    assert part("short", "anything", CONTENT_BYTES) == "short"
