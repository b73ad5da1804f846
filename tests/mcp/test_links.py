"""Memory that stays true, over MCP with a real server: an update is shown before what it
replaces and marks it; look-alike memories about different people are never linked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.conftest import InProcess, ServerProcess


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


async def test_the_newer_fact_first_and_look_alikes_never_linked(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        ids = {}
        for key, text in [
            ("golf", "Drives a 2015 VW Golf to work."),
            ("priya", "Team lead is Priya Nair."),
            ("music", "Listens to a lot of Radiohead and Portishead while coding."),
            ("sister", "My sister lives in Hamburg."),
            ("brother", "My brother lives in Munich."),
            ("leo", "Leo has football practice on Saturdays."),
            ("ana", "Ana has ballet on Saturdays."),
            ("brompton", "Sold the Golf in May; now cycles to work on a Brompton."),
            ("tom", "Priya left the company; the new team lead is Tom Becker."),
        ]:
            stored = await call(client, "store_memory", content=text)
            assert stored["status"] == "stored"
            ids[key] = stored["memory_id"]
            if key == "brompton":
                assert (stored.get("linked"), stored.get("linked_to"), stored.get("link_kind")) == (
                    "supersedes",
                    ids["golf"],
                    "update",
                )
                assert ids["golf"] in stored["message"]
            elif key == "tom":
                assert (stored.get("linked"), stored.get("linked_to")) == ("supersedes", ids["priya"])
            else:
                assert stored.get("linked") is None, key

        for question, newer, older in [
            ("how do I get to work?", "brompton", "golf"),
            ("who is my team lead?", "tom", "priya"),
        ]:
            results = (await call(client, "search_memory", query=question))["results"]
            order = [r["memory_id"] for r in results]
            assert order[0] == ids[newer], question
            if ids[older] in order:
                old = results[order.index(ids[older])]
                assert old.get("superseded_by") == ids[newer] and old.get("link_kind") == "update"
            assert results[0].get("supersedes") == ids[older]

        golf = await call(client, "get_memory", memory_id=ids["golf"])
        assert golf["content"] == "Drives a 2015 VW Golf to work."  # nothing deleted
        assert golf.get("superseded_by") == ids["brompton"]
        listed = {m["memory_id"]: m for m in (await call(client, "list_memories", limit=20))["memories"]}
        assert listed[ids["tom"]].get("supersedes") == ids["priya"]
        for key in ("sister", "brother", "leo", "ana", "music"):
            assert listed[ids[key]].get("supersedes") is None and listed[ids[key]].get("superseded_by") is None, key

        # explicit update_memory works as before, and keeps the links
        updated = await call(client, "update_memory", memory_id=ids["golf"], tags=["car"])
        assert updated["memory"].get("superseded_by") == ids["brompton"] and updated["memory"]["tags"] == ["car"]


async def test_a_fuller_duplicate_is_linked_and_shown_once_first(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        short = await call(client, "store_memory", content="Favourite typeface is Futura.")
        full = await call(
            client, "store_memory", content="Favourite typeface is Futura, especially the bold weight for headlines."
        )
        assert (full.get("linked"), full.get("linked_to"), full.get("link_kind")) == (
            "supersedes",
            short["memory_id"],
            "duplicate",
        )
        shorter = await call(client, "store_memory", content="Futura is my favourite typeface")
        assert shorter.get("link_kind") == "duplicate" and shorter.get("linked_to") == full["memory_id"]
        assert shorter.get("linked") == "superseded_by"  # the fuller one, stored before, stays first
        results = (await call(client, "search_memory", query="what's my favourite typeface?"))["results"]
        assert results[0]["memory_id"] == full["memory_id"]


@pytest.mark.server("the process is the point: a server killed by SIGKILL, and its store process with it")
async def test_links_survive_a_killed_server(tmp_path: Path, model_dir: Path) -> None:
    first = ServerProcess(tmp_path / "data").start()
    try:
        async with Client(first.mcp_url) as client:
            old = await call(client, "store_memory", content="My yoga class is on Wednesday evenings.")
            new = await call(
                client, "store_memory", content="My yoga class moved to Thursday evenings at the new studio."
            )
            assert new.get("linked_to") == old["memory_id"]
    finally:
        assert first.proc is not None
        first.proc.kill()  # SIGKILL: no shutdown, the store process goes with it
        first.proc.wait()
        first.stop()
    second = ServerProcess(tmp_path / "data").start()
    try:
        async with Client(second.mcp_url) as client:
            kept = await call(client, "get_memory", memory_id=old["memory_id"])
            results = (await call(client, "search_memory", query="when is my yoga class?"))["results"]
    finally:
        second.stop()
    assert kept.get("superseded_by") == new["memory_id"] and kept.get("link_kind") == "update"
    assert results[0]["memory_id"] == new["memory_id"]
