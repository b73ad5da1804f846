"""The console's list of memories, a memory's page and the hand-made memory's form
(`symbiote.console.memories`, `symbiote.console.editing`), in this process over the real app: dates
the wrong way round, a page past the end, an id no memory has and a confidence that is no number are
each answered in words, nothing stored changed.

In Chromium against a real server: tests/console/test_editing.py and test_trash_pages.py."""

from __future__ import annotations

import html

import httpx

from symbiote.memory import StoreRequest
from tests.conftest import InProcess


async def _token(http: httpx.AsyncClient) -> str:
    return (await http.get("/console/")).text.split('name="csrf-token" content="')[1].split('"')[0]


async def test_the_list_says_dates_the_wrong_way_round_and_shows_the_last_page_past_the_end(
    in_process: InProcess,
) -> None:
    for n in range(2):
        await in_process.engine.store(StoreRequest(f"Garden log {n}: the tomatoes were watered"))
    async with in_process.http() as http:
        reversed_dates = await http.get("/console/", params={"from": "2026-02-01", "to": "2026-01-01"})
        assert reversed_dates.status_code == 200 and "From must not be after To." in reversed_dates.text
        past = await http.get("/console/", params={"page": "40"})
        assert past.status_code == 200 and "Garden log 1: the tomatoes were watered" in past.text
        unknown = await http.get("/console/memories/mem_00000000000000010000")
        assert unknown.status_code == 404 and "No memory has the id mem_00000000000000010000." in unknown.text
        not_an_id = await http.get("/console/memories/..%2Fetc")
        assert not_an_id.status_code == 404


async def test_a_hand_made_memory_with_a_confidence_that_is_no_number_is_not_added(in_process: InProcess) -> None:
    async with in_process.http() as http:
        token = await _token(http)
        for confidence, said in (("high", "Confidence must be a number from 0 to 1 (got 'high')."), ("nan", "")):
            answer = await http.post(
                "/console/new",
                data={"csrf": token, "content": "The boiler was serviced in May", "confidence": confidence},
            )
            shown = html.unescape(answer.text)
            assert answer.status_code == 400 and "Not added: Confidence must be a number from 0 to 1" in shown
            assert said in shown and "The boiler was serviced in May" in shown  # the form kept
        added = await http.post(
            "/console/new", data={"csrf": token, "content": "The boiler was serviced in May", "confidence": "0,8"}
        )
        assert added.status_code == 303 and added.headers["location"].endswith("?saved=added")
    assert (await in_process.engine.stats()).total_memories == 1
