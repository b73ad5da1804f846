"""Replies an assistant can afford: the memories' texts in a reply share one budget, a long memory is shown
by the part that matched with its whole length, and get_memory gives the whole in parts. Through the
SDK's in-memory client over the real server, model and Chroma."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from symbiote.config import Settings
from symbiote.mcp.replies import CONTENT_BYTES, part
from symbiote.memory.context import MAX_CONTEXT_BYTES
from tests.conftest import InProcess, Volume

PLAN = "For the allotment we planned to grow San Marzano tomatoes in the south bed, staked, from May."
TOPICS = ["budget review", "office move", "hiring plan", "quarterly goals", "vendor contracts", "travel policy"]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """With ChatGPT's `search` and `fetch` too: every tool whose reply may carry a memory's text."""
    return dataclasses.replace(settings, chatgpt_tools="on")


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


@pytest.mark.slow
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


def widest(batch: int, index: int) -> dict[str, Any]:
    """A memory at the largest shape validation lets through, but for its text: ten tags of 50
    characters, a 30-letter type, a confidence."""
    tags = [f"b{batch}-{index}-{tag}-".ljust(50, "x") for tag in range(10)]
    text = f"Memory {batch}-{index}: the garden plan for the tomatoes and the bees. " * 40
    return {"content": text, "tags": tags, "type": "t" * 30, "confidence": 0.9}


@pytest.mark.slow
async def test_no_reply_passes_ten_thousand_tokens_at_any_limit_and_nothing_is_out_of_reach(
    in_process: InProcess, sampled: Callable[[int, int], Volume]
) -> None:
    """Every listing tool at its highest limit over 200 of the widest memories, a history of 30 long turns
    (100 memories and 10 turns in a sample, each still past a reply's budget; the whole under `--soak`):
    each reply holds under 10,000 tokens, and what a reply leaves out it names (next_before, not_shown)."""
    batches, turns = sampled(2, 1).count, sampled(30, 10).count
    async with Client(in_process.server) as client:
        ids: list[str] = []
        for batch in range(batches):
            stored, text = await call(client, "store_memories", memories=[widest(batch, i) for i in range(100)])
            assert tokens(text) < 10_000 and stored["stored"] == 100
            shown = [result["memory_id"] for result in stored["results"]]
            assert len(shown) + len(stored["not_shown"]) == 100 and stored["not_shown"][-1] == 100
            ids += shown

        listed: list[str] = []
        before = None
        while True:  # page to the end: the pages cut short still reach every memory, once
            page, text = await call(client, "list_memories", limit=50, **({"before": before} if before else {}))
            assert tokens(text) < 10_000
            listed += [m["memory_id"] for m in page["memories"]]
            before = page.get("next_before")
            if before is None:
                break
        assert len(listed) == len(set(listed)) == 100 * batches and set(ids) <= set(listed)

        found, text = await call(client, "get_memories", memory_ids=listed[:100])
        assert tokens(text) < 10_000 and found["found"] == 100
        assert [m["memory_id"] for m in found["memories"]] + found["not_shown"] == listed[:100]

        hits, text = await call(client, "search_memory", query="garden plan tomatoes", limit=20, min_relevance=0)
        assert tokens(text) < 10_000 and len(hits["results"]) + len(hits.get("below_cutoff", [])) == 20

        for turn in range(turns):
            await call(client, "append_history", conversation_id="c1", role="user", text=f"turn {turn} " + "x " * 5000)
        history, text = await call(client, "get_history", conversation_id="c1", n=500)
        assert tokens(text) < 10_000 and history["total_turns"] == turns
        assert (
            history["turns"][-1]["text"].startswith(f"turn {turns - 1}")
            and history["turns"][-1]["text_chars"] == len(f"turn {turns - 1} " + "x " * 5000) - 1
        )  # its end space is not kept


async def test_fetch_gives_a_long_memory_s_beginning_and_where_the_rest_is(in_process: InProcess) -> None:
    """ChatGPT's fetch takes only an id: a long memory comes as its beginning, with its length and the
    offset get_memory takes for the rest, and the two join to the whole."""
    note = "\n".join(long_note(random.Random(index), index, with_plan=index == 2) for index in range(5))  # ~85,000
    async with Client(in_process.server) as client:
        stored, _text = await call(client, "store_memory", content=note)
        result = await client.call_tool("fetch", {"id": stored["memory_id"]})
        got = result.structured_content
        assert not result.is_error and got is not None
        assert tokens(result.content[0].text) < 10_000  # type: ignore[union-attr]
        assert got["metadata"]["content_chars"] == len(note) and got["title"].startswith("Meeting notes 0")
        whole, offset = got["text"], got["metadata"]["next_offset"]
        while offset is not None:
            rest, _text = await call(client, "get_memory", memory_id=stored["memory_id"], offset=offset)
            whole, offset = whole + rest["content"], rest.get("next_offset")
        short, _text = await call(client, "store_memory", content="My bike is blue.")
        plain = (await client.call_tool("fetch", {"id": short["memory_id"]})).structured_content
    assert whole == note
    assert plain is not None and plain["text"] == "My bike is blue." and "content_chars" not in plain["metadata"]


@pytest.mark.slow
async def test_every_turn_of_a_long_history_is_within_reach(in_process: InProcess) -> None:
    """get_history pages back with `before`, and a turn past one reply's budget comes whole in parts."""
    said = [f"turn {turn} " + "word " * (3_000 if turn != 7 else 19_000) for turn in range(20)]
    async with Client(in_process.server) as client:
        for text in said:
            await call(client, "append_history", conversation_id="long", role="user", text=text)
        seen: dict[int, dict[str, Any]] = {}
        before = None
        while True:
            history, text = await call(
                client,
                "get_history",
                conversation_id="long",
                n=500,
                **({"before": before} if before is not None else {}),
            )
            assert tokens(text) < 10_000
            if not history["turns"]:
                break
            seen.update({turn["turn_index"]: turn for turn in history["turns"]})
            before = history["turns"][0]["turn_index"]
        assert sorted(seen) == list(range(20)) and seen[7]["text_chars"] == len(said[7].rstrip())
        whole, offset = "", 0
        while True:
            one, text = await call(client, "get_history", conversation_id="long", n=1, before=8, offset=offset)
            assert tokens(text) < 10_000
            (turn,) = one["turns"]
            whole += turn["text"]
            if "next_offset" not in turn:
                break
            offset = turn["next_offset"]
        assert whole == said[7].rstrip()
        refused = await client.call_tool("get_history", {"conversation_id": "long", "n": 5, "offset": 10})
    assert refused.is_error and "pass n=1" in refused.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
async def test_build_context_at_its_largest_budget_stays_under_ten_thousand_tokens(in_process: InProcess) -> None:
    """The widest budget a call may ask for, over long notes and turns of many bytes a token (digits, CJK)."""
    rng = random.Random(11)
    async with Client(in_process.server) as client:
        for index in range(6):
            await call(client, "store_memory", content=long_note(rng, index, with_plan=index == 1))
        await call(client, "store_memory", content="番茄计划：五月在南边的菜地种番茄。" * 1_500)
        for turn in range(12):
            digits = " ".join(str(rng.randrange(10**9)) for _ in range(1_500))
            text = f"we talked about the tomatoes {digits}" if turn % 2 else "番茄" * 4_000
            await call(client, "append_history", conversation_id="plans", role="user", text=text)
        built, text = await call(
            client, "build_context", conversation_id="plans", message="tomatoes in the allotment", token_budget=8_000
        )
        too_wide = await client.call_tool(
            "build_context", {"conversation_id": "plans", "message": "tomatoes", "token_budget": 8_001}
        )
    assert tokens(text) < 10_000 and built["truncated"] and built["token_count"] <= 8_000, built["note"]
    assert len(built["context"].encode()) <= MAX_CONTEXT_BYTES  # 7,219 tokens of 23,998 bytes, when written
    assert built["memory_ids"] and built["history_turns"] and built["history_turns"][-1] == 11
    assert too_wide.is_error and "from 64 to 8000" in too_wide.content[0].text  # type: ignore[union-attr]
