"""build_context: the history tail plus the relevant memories, formatted and cut to a token budget."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from tokenizers import Tokenizer

from symbiote.config import Settings
from symbiote.errors import InvalidInputError
from symbiote.memory.context import HISTORY_HEADER, MEMORY_HEADER, ContextBuilder, TokenCounter, fit
from symbiote.memory.requests import StoreRequest
from symbiote.runtime import Runtime
from tests.conftest import InProcess, make_runtime


@pytest.fixture(scope="module")
def counter(model_dir: Path) -> TokenCounter:
    return TokenCounter(model_dir / "tokenizer.json")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[Runtime]:
    built = make_runtime(Settings(chromadb_path=tmp_path_factory.mktemp("context") / "data", model_dir=model_dir))
    yield built
    built.close()


@pytest.fixture
def builder(runtime: Runtime) -> ContextBuilder:
    assert runtime.history is not None
    return runtime.history.context


def new_id() -> str:
    return f"conv-{uuid.uuid4().hex[:10]}"


# -- counting and cutting -----------------------------------------------------------------------


def test_tokens_are_the_model_tokenizers(counter: TokenCounter, model_dir: Path) -> None:
    reference = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    reference.no_truncation()
    text = "Caroline's adoption agency meeting is on Tuesday at 10:30, near the Praça do Comércio. " * 40
    assert counter.count(text) == len(reference.encode(text, add_special_tokens=False).ids) > 256  # no truncation
    assert counter.name == "all-MiniLM-L6-v2 WordPiece"


@pytest.mark.parametrize("limit", [3, 8, 17, 20])
def test_cut_keeps_the_start_within_the_limit(counter: TokenCounter, limit: int) -> None:
    text = "User: we should book the hotel near the river, then the flights, then the museum tickets for Sunday."
    piece = counter.cut(text, limit)
    assert counter.count(piece) <= limit
    assert piece.endswith("…") and text.startswith(piece[:-2])
    assert counter.cut(text, counter.count(text)) == text  # what fits is not cut


def test_without_the_tokenizer_it_counts_four_characters_a_token(tmp_path: Path) -> None:
    rough = TokenCounter(tmp_path / "missing.json")
    assert rough.count("x" * 40) == 10 and "approximate" in rough.name
    assert rough.count(rough.cut("word " * 100, 12)) <= 12


def test_everything_fits_when_the_budget_allows(counter: TokenCounter) -> None:
    memories = ["- likes tea", "- lives in Porto"]
    turns = ["User: three", "Assistant: two", "User: one"]
    kept_memories, kept_turns, cut = fit(counter, memories, turns, 1000)
    assert (kept_memories, kept_turns, cut) == (memories, turns, False)


@pytest.mark.parametrize("budget", [64, 80, 100, 150, 220, 300])
def test_cutting_keeps_newest_turns_and_best_memories_within_budget(counter: TokenCounter, budget: int) -> None:
    memories = [f"- memory {i}: " + "detail " * 10 for i in range(8)]  # best first
    turns = [f"User: turn {i} " + "words " * 12 for i in range(15, -1, -1)]  # newest first
    kept_memories, kept_turns, cut = fit(counter, memories, turns, budget)
    used = sum(counter.count(x) for x in kept_memories + kept_turns)
    used += (counter.count(MEMORY_HEADER) if kept_memories else 0) + (
        counter.count(HISTORY_HEADER) if kept_turns else 0
    )
    assert used <= budget and cut
    # a prefix of each list: the newest turns and the best memories, the last possibly cut short
    for kept, source in ((kept_memories, memories), (kept_turns, turns)):
        assert [k for k in kept if not k.endswith("…")] == source[: len([k for k in kept if not k.endswith("…")])]
        assert all(source[i].startswith(k[:-2]) for i, k in enumerate(kept) if k.endswith("…"))
    assert kept_turns, "the newest turn always gets a share"
    if budget >= 100:
        assert (
            kept_memories
            and counter.count(HISTORY_HEADER) + sum(counter.count(t) for t in kept_turns) >= budget // 2 - 20
        )


def test_memories_short_of_their_half_leave_the_rest_to_the_conversation(counter: TokenCounter) -> None:
    memories = ["- prefers tabs"]
    turns = [f"User: turn {i} " + "words " * 12 for i in range(30, -1, -1)]
    kept_memories, kept_turns, _ = fit(counter, memories, turns, 300)
    assert kept_memories == memories
    history_tokens = counter.count(HISTORY_HEADER) + sum(counter.count(t) for t in kept_turns)
    assert history_tokens > 300 - counter.count(MEMORY_HEADER) - counter.count(memories[0]) - 20


# -- building it from a real store ----------------------------------------------------------------


async def test_context_has_relevant_memories_then_the_recent_conversation(
    runtime: Runtime, builder: ContextBuilder
) -> None:
    tabs = await runtime.engine.store(StoreRequest("The user prefers tabs over spaces in Python code", ["editor"]))
    await runtime.engine.store(StoreRequest("Caroline adopted a dog named Biscuit last spring"))
    cid = new_id()
    assert runtime.history is not None
    for _i, (role, text) in enumerate(
        [
            ("user", "Let's set up the new repository"),
            ("assistant", "Sure. Which formatter?"),
            ("user", "Something standard"),
        ]
    ):
        await runtime.history.history.append(cid, role, text)
    built = await builder.build(cid, "Do I prefer tabs or spaces in Python?")
    assert built.memory_ids[:1] == [tabs.memory_id] and built.memories_found >= 1
    assert built.history_turns == [0, 1, 2] and built.history_available == 3
    assert built.context.startswith(MEMORY_HEADER + "\n- The user prefers tabs over spaces in Python code (")
    assert "tags: editor" in built.context
    assert built.context.endswith(
        HISTORY_HEADER
        + "\nUser: Let's set up the new repository\nAssistant: Sure. Which formatter?\nUser: Something standard"
    )
    assert "Biscuit" not in built.context  # irrelevant memories stay out
    assert built.token_count <= built.token_budget == 2000 and not built.truncated
    assert built.tokenizer == "all-MiniLM-L6-v2 WordPiece"


async def test_a_small_budget_keeps_the_newest_turns(runtime: Runtime, builder: ContextBuilder) -> None:
    cid = new_id()
    assert runtime.history is not None
    for i in range(10):
        await runtime.history.history.append(
            cid, "user" if i % 2 == 0 else "assistant", f"Message {i} about the garden shed plans"
        )
    built = await builder.build(cid, "what colour should the shed be?", token_budget=64)
    assert built.truncated and built.token_count <= 64
    assert built.history_turns == list(range(10 - len(built.history_turns), 10)) and built.history_turns
    assert "Message 9 about" in built.context and "Message 0 about" not in built.context


async def test_unknown_conversation_gives_memories_only(runtime: Runtime, builder: ContextBuilder) -> None:
    await runtime.engine.store(StoreRequest("The user's sourdough starter is named Clint Yeastwood"))
    built = await builder.build(new_id(), "how is my sourdough starter called?")
    assert built.history_turns == [] and HISTORY_HEADER not in built.context
    assert "Clint Yeastwood" in built.context


async def test_defaults_come_from_settings(runtime: Runtime, tmp_path: Path) -> None:
    small = make_runtime(
        replace(
            runtime.settings,
            chromadb_path=tmp_path / "data",
            history_tail_n=4,
            memory_top_k=1,
            context_token_budget=500,
        )
    )
    try:
        assert small.history is not None
        cid = new_id()
        for i in range(9):
            await small.history.history.append(cid, "user", f"note {i}")
        for text in ("Favourite fruit: mango", "Favourite fruit used to be apples", "Favourite fruit juice: orange"):
            await small.engine.store(StoreRequest(text))
        built = await small.history.context.build(cid, "favourite fruit")
        assert built.history_turns == [5, 6, 7, 8] and built.history_available == 4
        assert len(built.memory_ids) == 1 == built.memories_found and built.token_budget == 500
    finally:
        small.close()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"conversation_id": "c", "message": "  "}, "message is empty"),
        ({"conversation_id": "", "message": "hi"}, "conversation_id is empty"),
        ({"conversation_id": "c", "message": "hi", "token_budget": 63}, "token_budget must be a whole number from 64"),
        ({"conversation_id": "c", "message": "hi", "token_budget": "lots"}, "token_budget must be"),
    ],
)
async def test_bad_arguments_say_what_is_wrong(
    builder: ContextBuilder, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await builder.build(**arguments)


async def test_build_context_tool_through_the_protocol(in_process: InProcess) -> None:
    cid = new_id()
    async with Client(in_process.server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        stored = await client.call_tool(
            "store_memory", {"content": "The user's road bike is a steel Bianchi from 1987"}
        )
        await client.call_tool(
            "append_history", {"conversation_id": cid, "role": "user", "text": "I want to ride on Sunday"}
        )
        result = await client.call_tool("build_context", {"conversation_id": cid, "message": "Which bike do I own?"})
    assert not stored.is_error and not result.is_error, result.content
    built = result.structured_content
    assert built is not None
    assert tools["build_context"].input_schema["required"] == ["conversation_id", "message"]
    assert tools["build_context"].annotations.read_only_hint is True
    assert "steel Bianchi from 1987" in built["context"] and "User: I want to ride on Sunday" in built["context"]
    assert built["context"].index("Bianchi") < built["context"].index("ride on Sunday")
    assert built["token_count"] <= built["token_budget"]
