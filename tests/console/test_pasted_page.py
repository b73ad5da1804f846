"""The pasted list on the console's import page (`symbiote.console.pasted_page`), in this process over
the real app: a paste that cannot be imported, or an undo that does not name its import, is refused
in words with nothing stored or deleted; an undo trashes only what its import added.

Through a real server and at the size limits: tests/console/test_pasted_limits.py."""

from __future__ import annotations

import re

import httpx

from symbiote.memory import StoreRequest
from tests.conftest import InProcess


async def _token(http: httpx.AsyncClient) -> str:
    return (await http.get("/console/transfer")).text.split('name="csrf-token" content="')[1].split('"')[0]


async def test_a_paste_that_cannot_be_imported_is_refused_in_words(in_process: InProcess) -> None:
    async with in_process.http() as http:
        token = await _token(http)
        expired = await http.post("/console/import/text", data={"text": "- one", "action": "store"})
        assert expired.status_code == 403 and "This form has expired" in expired.text
        bad_tag = await http.post(
            "/console/import/text", data={"csrf": token, "text": "- The shed key is under the pot", "tag": "t" * 51}
        )
        assert bad_tag.status_code == 400 and "tag 1 is 51 characters long; the limit is 50." in bad_tag.text
        empty = await http.post("/console/import/text", data={"csrf": token, "text": "  \n ", "action": "store"})
        assert empty.status_code == 400 and "Nothing was pasted, so nothing was imported." in empty.text
    assert (await in_process.engine.stats()).total_memories == 0


async def test_undo_of_a_paste_trashes_what_it_added_and_a_bad_undo_nothing(in_process: InProcess) -> None:
    older = await in_process.engine.store(StoreRequest("The old shed key was under the mat", tags=["pasted-keys"]))
    async with in_process.http() as http:
        token = await _token(http)
        stored = await http.post(
            "/console/import/text",
            data={
                "csrf": token,
                "text": "- The shed key is under the pot\n- The van key is on the hook",
                "tag": "pasted-keys",
                "action": "store",
            },
        )
        assert stored.status_code == 200
        fields = dict(re.findall(r'name="(from|to)" value="(\d+)"', stored.text))
        assert set(fields) == {"from", "to"}
        for span in ({"from": "x", "to": "1"}, {"from": "9", "to": "1"}):
            refused = await http.post("/console/import/undo", data={"csrf": token, "tag": "pasted-keys", **span})
            assert refused.status_code == 400 and "does not say which import it is for" in refused.text
        assert (await in_process.engine.stats()).total_memories == 3
        undone = await http.post("/console/import/undo", data={"csrf": token, "tag": "pasted-keys", **fields})
        assert undone.status_code == 303 and "deleted=2" in undone.headers["location"]
        expired = await http.post("/console/import/undo", data={"tag": "pasted-keys", **fields})
        assert expired.status_code == 403
    assert (await in_process.engine.stats()).total_memories == 1
    assert (await in_process.engine.get(older.memory_id)).content == "The old shed key was under the mat"
