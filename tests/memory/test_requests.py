"""The engine's entry points take one typed request each, so that strict mypy checks a caller's
field names (a misspelled search option was an `**options` mypy could not see) and the request
keeps the order and defaults the engine's arguments had."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from symbiote.memory.requests import SearchRequest, StoreRequest, UpdateRequest

ROOT = Path(__file__).resolve().parents[2]

CALLER = """
from symbiote.memory.engine import MemoryEngine
from symbiote.memory.requests import SearchRequest, StoreRequest, UpdateRequest


async def caller(engine: MemoryEngine) -> None:
    await engine.search(SearchRequest("coffee", limit=3, tag_mode="all"))
    await engine.store(StoreRequest("Likes tea", ["drinks"], confidence=0.9, client="console"))
    await engine.update(UpdateRequest("mem_1", bookmarked=True))
    await engine.search(SearchRequest("coffee", limt=3))
    await engine.store(StoreRequest("Likes tea", tag=["drinks"]))
    await engine.update(UpdateRequest("mem_1", bookmark=True))
    await engine.search("coffee", limit=3)
"""


def test_strict_mypy_names_each_misspelled_field(tmp_path: Path) -> None:
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    # In its own process: mypy run in this one kept 171 MB of its own to the end of the run.
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(caller),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    out, status = checked.stdout, checked.returncode
    errors = {line.split(":")[1]: line.split(": error: ", 1)[1] for line in out.splitlines() if ": error: " in line}
    assert status == 1
    assert sorted(errors) == ["10", "11", "12", "13"], out  # the three good calls pass
    assert 'Unexpected keyword argument "limt" for "SearchRequest"' in errors["10"]
    assert 'Unexpected keyword argument "tag" for "StoreRequest"' in errors["11"]
    assert 'Unexpected keyword argument "bookmark" for "UpdateRequest"' in errors["12"]
    assert 'Argument 1 to "search" of "MemoryEngine" has incompatible type "str"' in errors["13"]


def test_the_requests_keep_the_engines_order_and_defaults() -> None:
    """Positional callers (the MCP tools) pass the fields in the order the engine's arguments had."""
    assert [f.name for f in dataclasses.fields(StoreRequest)] == [
        "content", "tags", "type", "confidence", "conversation_id", "bookmarked", "client", "replaces"
    ]  # fmt: skip
    assert StoreRequest("x") == StoreRequest("x", None, None, None, None, False, None, None)
    assert [f.name for f in dataclasses.fields(UpdateRequest)] == [
        "memory_id", "content", "tags", "type", "confidence", "bookmarked"
    ]  # fmt: skip
    assert UpdateRequest("mem_1") == UpdateRequest("mem_1", None, None, None, None, None)
    assert SearchRequest("x") == SearchRequest("x", 5, None, None, None, None, None, "any", None, None)
