"""Replies measured as they go out (issue 67): paging by `next_offset` reaches the end of any text (no
spaces, emoji, CJK, control characters), and no reply passes its budget in the bytes the server sends,
escapes and tags included. A property test over random texts with the real paging and reply code, and
the same through the SDK's in-memory client over the real server, model and Chroma, each reply
serialized as both protocol versions' transports write it.

Sampled by default with the run's seed, whole under `--soak` (tests/conftest.py: volume)."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult, JSONRPCResponse

from symbiote.config import Settings
from symbiote.mcp.replies import CONTENT_BYTES, REPLY_BYTES, page, page_turn, reply
from symbiote.memory import Memory, SearchRequest, Turn
from symbiote.storage import text as unicode_text
from tests.conftest import InProcess, Volume

CROPS = (
    "tomatoes beans peas leeks onions garlic kale chard carrots beets radishes squash pumpkins maize potatoes".split()
)
CROPS += "lettuce spinach fennel celery parsnips".split()
ENVELOPE = 200  # what a tools/call response adds around its result: jsonrpc, id, the keys, isError
# What texts are made of: scripts without spaces, emoji, what JSON escapes, and some words.
PIECES = ["漢字", "😀", "👩‍👩‍👧", "\x01", "\x1f", '"', "\\", "\n", "\t", " ", "e ", "word ", "é", "\u2028", "\x7f", "a"]


def texts_from(parts: list[tuple[str, int]], limit: int = 99_000) -> str:
    """Runs of pieces, at most `limit` bytes of UTF-8 (a memory holds at most 100,000), never blank."""
    text = "".join(piece * times for piece, times in parts)
    text = text.encode()[:limit].decode(errors="ignore")
    return "x" + text + "x"  # a stored text is stripped of its outer space


PARTS = st.lists(
    st.tuples(
        st.sampled_from(PIECES) | st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8),
        st.sampled_from([1, 3, 200, 5_000, 30_000]),
    ),
    min_size=1,
    max_size=8,
)


def hostile_text(rng: random.Random) -> str:
    """The property test's texts, drawn with `rng`, for the tests through the server."""
    return texts_from([(rng.choice(PIECES), rng.choice([1, 3, 200, 5_000, 30_000])) for _ in range(rng.randint(1, 6))])


def sent(result: CallToolResult, modern: bool = False) -> dict[str, int]:
    """A tools/call reply's bytes as the server writes it: the whole response as the 2025-11-25 transport
    serializes it (pydantic's JSON) or the 2026-07-28 one (`json.dumps`, ASCII), and the copy an assistant
    reads, its text content, inside that response."""
    body = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    response = JSONRPCResponse(jsonrpc="2.0", id=1, result=body)
    if modern:
        wire = json.dumps(response.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    else:
        wire = response.model_dump_json(by_alias=True, exclude_unset=True)
    text = result.content[0].text  # type: ignore[union-attr]
    return {"wire": len(wire.encode()), "text": len(json.dumps(text, ensure_ascii=modern).encode()) - 2}


def within_budget(result: CallToolResult) -> None:
    size = sent(result)
    assert size["text"] <= REPLY_BYTES and size["wire"] <= 2 * REPLY_BYTES + ENVELOPE, size


def pages_of(memory: Memory) -> Callable[[int], tuple[str, int | None]]:
    """get_memory's part at an offset, checked within the budget as sent, reply and all."""

    def take(offset: int) -> tuple[str, int | None]:
        shown = page(memory, offset)
        assert unicode_text.sent_bytes(shown.content) <= CONTENT_BYTES
        within_budget(reply(shown))
        return shown.content, shown.next_offset

    return take


def paged(whole: str, take: Callable[[int], tuple[str, int | None]]) -> list[str]:
    """The parts `take(offset)` gives, following next_offset from 0: each is checked within the budget as
    sent and non-empty, and the loop must end within one part a character."""
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        assert len(parts) <= len(whole), "paging does not move on"
        part, after = take(offset)
        assert part or after is None, (offset, after)
        assert after is None or after == offset + len(part)
        parts.append(part)
        offset = after
    return parts


def test_paging_reaches_the_end_of_any_text_within_the_budget(sampled: Callable[[int, int], Volume]) -> None:
    """get_memory's and get_history's paging, replies and all, over random texts: the parts join to the
    text exactly. 60 texts, 2,000 under --soak."""
    drawn = sampled(2_000, 60)

    @seed(drawn.seed)
    @examples(max_examples=drawn.count, deadline=None, suppress_health_check=list(HealthCheck))
    @given(parts=PARTS)
    def check(parts: list[tuple[str, int]]) -> None:
        whole = texts_from(parts)
        memory = Memory(memory_id="mem_00000000000000000001", content=whole, timestamp="2026-12-06T00:00:00Z")
        turn = Turn(conversation_id="c", turn_index=0, role="user", text=whole, ts="2026-12-06T00:00:00Z")

        def turn_part(offset: int) -> tuple[str, int | None]:
            shown = page_turn(turn, offset)
            return shown.text, shown.next_offset

        assert "".join(paged(whole, pages_of(memory))) == whole
        assert "".join(paged(whole, turn_part)) == whole

    check()


def test_a_part_past_a_long_run_without_spaces_moves_on() -> None:
    """The probe's two texts: the second part was empty, at the same next_offset, forever."""
    for whole in ["メモ: " + "漢字" * 16_000, "e " + "😀" * 24_000]:
        memory = Memory(memory_id="mem_00000000000000000001", content=whole, timestamp="2026-12-06T00:00:00Z")
        parts = paged(whole, pages_of(memory))
        assert "".join(parts) == whole and 1 < len(parts) <= 8


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """With ChatGPT's `search` and `fetch` too: every tool whose reply may carry a memory's text."""
    return dataclasses.replace(settings, chatgpt_tools="on")


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error and result.structured_content is not None, result.content
    within_budget(result)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_texts_of_escapes_come_within_the_budget_and_whole_in_parts(
    in_process: InProcess, sampled: Callable[[int, int], Volume], mode: str
) -> None:
    """The probe's texts (control characters: 120,012 bytes from get_memory or fetch; quotes and
    backslashes: 40,118) and random hostile ones: every reply within the budget as sent, and get_memory
    from offset 0, or from fetch's next_offset, gives the whole text back; through both protocol
    versions' paths in the SDK (the handshake's streams, the 2026-07-28 per-request one)."""
    drawn = sampled(40, 4)
    texts = ["x " + "\x01" * 20_000, "x " + '"' * 20_000, "x " + "\\" * 30_000, "メモ: " + "漢字" * 16_000]
    texts += [hostile_text(drawn.rng) for _ in range(drawn.count)]
    async with Client(in_process.server, mode=mode) as client:
        for text in texts:
            stored = (await call(client, "store_memory", content=text)).structured_content
            assert stored is not None
            memory_id = stored["memory_id"]
            whole = (await in_process.engine.get(memory_id)).content

            async def take(offset: int, memory_id: str = memory_id) -> tuple[str, int | None]:
                got = (await call(client, "get_memory", memory_id=memory_id, offset=offset)).structured_content
                assert got is not None
                return got["content"], got.get("next_offset")

            parts, offset = [], 0
            while True:  # paged() for a coroutine
                assert len(parts) <= len(whole)
                part, after = await take(offset)
                assert part or after is None
                parts.append(part)
                if after is None:
                    break
                offset = after
            assert "".join(parts) == whole

            fetched = (await call(client, "fetch", id=memory_id)).structured_content
            assert fetched is not None
            rest = fetched["metadata"].get("next_offset")
            assert fetched["text"] == parts[0] and (rest is None) == (len(parts) == 1)
            assert "".join(parts[1:]) == whole[len(fetched["text"]) :]


async def test_a_search_with_the_widest_tags_stays_within_the_budget_and_names_what_it_left_out(
    in_process: InProcess,
) -> None:
    """search_memory at limit 20 over memories with ten tags of 50 emoji each (51,373 bytes before): the
    lowest hits are left out and named in not_shown, and get_memories gives them."""
    async with Client(in_process.server) as client:
        for index in range(20):
            tags = [f"{index:02d}{tag}" + "😀" * 47 for tag in "abcdefghij"]
            text = f"Garden plan {index}: {CROPS[index]} in bed {index}, sown in week {index * 7 % 52}."
            await call(client, "store_memory", content=text, tags=tags)
        found = await call(client, "search_memory", query="what is in the garden plan?", limit=20, min_relevance=0)
        hits = found.structured_content
        assert hits is not None
        shown = [hit["memory_id"] for hit in [*hits["results"], *hits.get("below_cutoff", [])]]
        engine = await in_process.engine.search(
            SearchRequest(query="what is in the garden plan?", limit=20, min_relevance=0)
        )
        ranked = [hit.memory_id for hit in [*engine.results, *engine.below_cutoff]]
        assert len(ranked) > 10 and hits["not_shown"] and shown + hits["not_shown"] == ranked, (shown, hits)
        assert hits["count"] == len(hits["results"]) and not set(shown) & set(hits["not_shown"])
        rest = (await call(client, "get_memories", memory_ids=hits["not_shown"])).structured_content
        assert rest is not None and rest["found"] == len(hits["not_shown"])
        modern = sent(found, modern=True)
    # The 2026-07-28 transport writes the same reply ASCII-escaped (the SDK's json.dumps): an emoji
    # is 12 bytes there, 4 here.
    assert modern["wire"] > sent(found)["wire"]


@pytest.mark.slow
async def test_history_and_context_of_control_characters_stay_within_the_budget(in_process: InProcess) -> None:
    """build_context over turns of control characters was 144,023 bytes; get_history's turns and one long
    turn's parts are measured as sent too."""
    said = ["\x01" * 20_000 + " end", '"' * 25_000, "漢字" * 20_000]
    async with Client(in_process.server) as client:
        for text in said * 4:
            await call(client, "append_history", conversation_id="c", role="user", text=text)
        await call(client, "build_context", conversation_id="c", message="what was said?", token_budget=8_000)
        history = (await call(client, "get_history", conversation_id="c", n=500)).structured_content
        assert history is not None and history["total_turns"] == 12
        for before, text in ((1, said[0]), (2, said[1]), (3, said[2])):
            parts, offset = [], 0
            while offset is not None:
                one = (
                    await call(client, "get_history", conversation_id="c", n=1, before=before, offset=offset)
                ).structured_content
                assert one is not None
                (turn,) = one["turns"]
                assert turn["text"] or "next_offset" not in turn
                parts.append(turn["text"])
                offset = turn.get("next_offset")
            assert "".join(parts) == text


@pytest.mark.slow
async def test_the_recent_memories_resource_stays_within_the_budget(in_process: InProcess) -> None:
    """memory://recent gave the 20 newest whole (20 memories of 100,000 bytes: 2 MB); now a tool reply's
    budget as sent, each long one as its beginning with its whole length."""
    notes = [f"Note {index}: " + " ".join(f"{CROPS[index]} row {row}" for row in range(1_000)) for index in range(20)]
    async with Client(in_process.server) as client:
        await call(client, "store_memories", memories=[{"content": note} for note in notes])
        recent = await client.read_resource("memory://recent")
    text = recent.contents[0].text  # type: ignore[union-attr]
    page = json.loads(text)
    assert len(json.dumps(text, ensure_ascii=False).encode()) - 2 <= REPLY_BYTES < sum(map(len, notes))
    assert page["memories"] and all(memory["content_chars"] in map(len, notes) for memory in page["memories"])
    assert len(page["memories"]) == 20 or page["next_before"] == page["memories"][-1]["memory_id"]
