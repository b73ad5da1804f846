"""The console's review of linked memories, with the real server over HTTP: the page lists the
links newest first, and keep both, merge and undo each change what the assistant then gets."""

from __future__ import annotations

from typing import Any

from mcp import Client

from tests.conftest import InProcess


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


def csrf(page: str) -> str:
    return page.split('name="csrf-token" content="')[1].split('"')[0]


async def test_keep_both_merge_and_undo(in_process: InProcess) -> None:
    async with Client(in_process.server) as client:
        stored = {}
        for key, text in [
            ("golf", "Drives a 2015 VW Golf to work."),
            ("coach", "Uses VS Code for all my projects."),
            ("rate", "Day rate is £350."),
            ("brompton", "Sold the Golf in May; now cycles to work on a Brompton."),
            ("coach2", "Switched from VS Code to Neovim last month and not going back."),
            ("rate2", "Put my day rate up to £420 from April."),
        ]:
            stored[key] = (await call(client, "store_memory", content=text))["memory_id"]
        async with in_process.http() as http:
            listing = await http.get("/console/links")
            assert listing.status_code == 200
            text = listing.text
            # newest first: the day rate's link, then the coach's, then the car's
            assert text.index("Put my day rate up") < text.index("Switched from VS Code") < text.index("Brompton")
            assert text.count(">Keep both<") == 3 and text.count(">Merge<") == 3 and text.count(">Undo<") == 3
            stats = await http.get("/console/stats")
            assert '3</div><a class="card-link" href="/console/links">linked memories, 3 to review</a>' in stats.text
            token = csrf(text)

            assert (await http.post(f"/console/links/{stored['golf']}/keep", data={})).status_code == 403
            kept = await http.post(f"/console/links/{stored['golf']}/keep", data={"csrf": token})
            assert kept.status_code == 303 and kept.headers["location"].endswith("/links?done=keep")
            assert "linked memories, 2 to review</a>" in (await http.get("/console/stats")).text
            golf = await call(client, "get_memory", memory_id=stored["golf"])
            assert golf.get("superseded_by") == stored["brompton"]  # both kept, still linked

            undone = await http.post(f"/console/links/{stored['coach']}/undo", data={"csrf": token})
            assert undone.status_code == 303
            coach = await call(client, "get_memory", memory_id=stored["coach"])
            coach2 = await call(client, "get_memory", memory_id=stored["coach2"])
            assert coach.get("superseded_by") is None and coach2.get("supersedes") is None

            merged = await http.post(f"/console/links/{stored['rate']}/merge", data={"csrf": token})
            assert merged.status_code == 303
            missing = await client.call_tool("get_memory", {"memory_id": stored["rate"]})
            assert missing.is_error
            rate2 = await call(client, "get_memory", memory_id=stored["rate2"])
            assert rate2.get("supersedes") is None  # no link left pointing at nothing

            after = (await http.get("/console/links?done=merge")).text
            assert "Merged" in after and after.count(">Keep both<") == 1 and "Brompton" in after
            again = await http.post(f"/console/links/{stored['coach']}/undo", data={"csrf": token})
            assert again.status_code == 400  # no link left to review
            detail = (await http.get(f"/console/memories/{stored['golf']}")).text
            assert "Replaced by" in detail and stored["brompton"] in detail
