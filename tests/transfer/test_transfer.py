"""Export and import with the real model and real stores: the round trip, idempotence, refused
lines with their numbers, vectors reused, the reference memory server's knowledge graph, and the
`symbiote export` / `symbiote import` commands."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio

from symbiote.config import Settings
from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME
from symbiote.memory import EnginePolicy, SearchRequest, StoreRequest, UpdateRequest
from symbiote.runtime import Runtime
from symbiote.storage import content_hash
from symbiote.transfer.exporting import export_lines
from symbiote.transfer.history_access import turn_reader
from symbiote.transfer.import_report import ImportReport
from symbiote.transfer.importing import BATCH, NOT_AN_EXPORT, Importer, NotAnExportError
from tests.conftest import MODEL_DIR, make_runtime

KNOWLEDGE_GRAPH = "\n".join(
    json.dumps(line)
    for line in [
        {
            "type": "entity",
            "name": "John_Smith",
            "entityType": "person",
            "observations": ["Speaks fluent Spanish", "Graduated in 2019"],
        },
        {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
        {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    ]
)


@pytest_asyncio.fixture
async def runtimes(tmp_path: Path, model_dir: Path) -> AsyncIterator[tuple[Runtime, Runtime]]:
    """Two instances on two empty data directories: the one exported from, the one imported into."""
    made = [
        make_runtime(Settings(chromadb_path=tmp_path / name, model_dir=model_dir, store_process=False))
        for name in ("source", "target")
    ]
    yield made[0], made[1]
    for runtime in made:
        runtime.close()


async def export_text(runtime: Runtime, *, history: bool = False, vectors: bool = False) -> str:
    turns = turn_reader(runtime.history.history) if history and runtime.history else None
    return "".join([chunk async for chunk in export_lines(runtime.engine.bulk, turns, with_vectors=vectors)])


async def import_text(
    runtime: Runtime, text: str, dry_run: bool = False, replace_conflicts: bool = False
) -> ImportReport:
    history = runtime.history.history if runtime.history else None
    importer = Importer(runtime.engine.bulk, history, dry_run=dry_run, replace_conflicts=replace_conflicts)
    return await importer.run(io.BytesIO(text.encode("utf-8")))


async def fill(runtime: Runtime) -> dict[str, str]:
    engine = runtime.engine
    ids = {}
    for content, extra in [
        ("Prefers dark roast coffee. Never with sugar.", {"tags": ["coffee", "preferences"], "type": "preference"}),
        ("Project Atlas launches on March 14; the team is Ana, Jonas and Lee.", {"tags": ["work"], "confidence": 0.9}),
        ("Maya's piano teacher is Mrs. Okafor — lessons on Tuesdays ☕ 17:30.", {"bookmarked": True}),
        ("Decided on PostgreSQL 16 for Atlas.", {"type": "decision", "conversation_id": "chat-7", "confidence": 0.95}),
    ]:
        ids[content] = (await engine.store(StoreRequest(content, **extra))).memory_id
    await engine.update(UpdateRequest(ids["Decided on PostgreSQL 16 for Atlas."], tags=["atlas", "database"]))
    return ids


def memory_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if json.loads(line).get("kind") == "memory"]


async def test_round_trip_gives_the_same_lines_and_a_second_import_adds_nothing(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    source, target = runtimes
    await fill(source)
    first = await export_text(source)
    header = json.loads(first.splitlines()[0])
    assert header["format"] == "symbiote-memories" and header["version"] == 2
    assert header["model"] == "all-MiniLM-L6-v2" and header["dimension"] == 384
    assert header["counts"]["memories"] == 4 and header["exported_at"].endswith("Z")
    lines = [json.loads(line) for line in memory_lines(first)]
    assert {"id", "content", "tags", "type", "metadata", "created", "updated"} <= set(lines[0])
    assert [line["created"] for line in lines] == sorted(line["created"] for line in lines)  # oldest first
    assert sum(1 for line in lines if line["updated"]) == 1

    report = await import_text(target, first)
    assert (report.added, report.unchanged, report.updated, report.refused_count) == (4, 0, 0, 0)
    again = await export_text(target)
    assert memory_lines(again) == memory_lines(first)  # ids, times, metadata: all kept

    twice = await import_text(target, first)
    assert (twice.added, twice.unchanged, twice.updated) == (0, 4, 0)
    assert (await target.engine.stats()).total_memories == 4
    found = await target.engine.search(SearchRequest("who teaches Maya piano?"))
    assert found.results and "Okafor" in found.results[0].content


async def test_vectors_from_the_same_model_are_kept_not_recomputed(runtimes: tuple[Runtime, Runtime]) -> None:
    source, target = runtimes
    ids = await fill(source)
    text = await export_text(source, vectors=True)
    assert all(len(json.loads(line)["vectors"]) >= 1 for line in memory_lines(text))
    report = await import_text(target, text)
    assert report.added == 4 and not report.reembedded
    wanted = list(ids.values())
    before, after = await source.engine.bulk.vectors(wanted), await target.engine.bulk.vectors(wanted)
    coffee = ids["Prefers dark roast coffee. Never with sugar."]
    assert before[coffee].shape == (3, 384)  # the whole text and its two sentences
    for mid in wanted:
        np.testing.assert_allclose(before[mid], after[mid], atol=1e-6)  # Chroma may return them normalised
    other_model = text.replace('"model":"all-MiniLM-L6-v2"', '"model":"another-model"', 1)
    third = await import_text(target, other_model)
    assert third.reembedded and third.unchanged == 4


async def test_malformed_lines_are_refused_by_number_and_nothing_stored_is_lost(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    source, target = runtimes
    await fill(source)
    kept = await target.engine.store(StoreRequest("Already here before the import", tags=["mine"]))
    good = memory_lines(await export_text(source))
    first = json.loads(good[0])
    bad = [
        '{"format":"symbiote-memories","version":1,"model":"all-MiniLM-L6-v2","dimension":384}',
        good[0],
        "{not json",
        json.dumps({"kind": "memory", "content": ""}),
        json.dumps({"kind": "memory", "id": "mem_123", "content": "a bad id"}),
        json.dumps({**first, "content": "the same id again"}),
        json.dumps({"kind": "memory", "content": "bad time", "created": "yesterday-ish"}),
        json.dumps({"kind": "memory", "content": "too many tags", "tags": [f"t{i}" for i in range(11)]}),
        json.dumps({"kind": "bookmark", "content": "unknown kind"}),
        "[1, 2, 3]",
        good[1],
        "",
        good[2],
    ]
    report = await import_text(target, "\n".join(bad) + "\n")
    assert report.added == 3
    assert [line for line, _ in report.refused] == [3, 4, 5, 6, 7, 8, 9, 10]
    reasons = dict(report.refused)
    assert "not valid JSON" in reasons[3] and "content is empty" in reasons[4] and "not a memory id" in reasons[5]
    assert "already appeared on line 2" in reasons[6] and "ISO-8601" in reasons[7] and "at most 10" in reasons[8]
    assert "unknown kind" in reasons[9] and "not a JSON object" in reasons[10]
    still = await target.engine.get(kept.memory_id)
    assert still.content == "Already here before the import" and still.tags == ["mine"]
    assert (await target.engine.stats()).total_memories == 4


async def test_other_text_is_a_conflict_a_newer_copy_updates_and_a_dry_run_changes_nothing(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    source, target = runtimes
    ids = await fill(source)
    text = await export_text(source)
    await import_text(target, text)
    coffee = ids["Prefers dark roast coffee. Never with sugar."]
    line = next(json.loads(line) for line in memory_lines(text) if json.loads(line)["id"] == coffee)
    soon = datetime.now(UTC) + timedelta(minutes=5)  # later than the stored copy, not in the future past a day
    retagged = {**line, "tags": ["coffee", "mornings"], "updated": soon.isoformat()}
    dry = await import_text(target, json.dumps(retagged), dry_run=True)
    assert dry.dry_run and dry.updated == 1 and (await target.engine.get(coffee)).tags == ["coffee", "preferences"]
    assert (await import_text(target, json.dumps(retagged))).updated == 1
    assert (await target.engine.get(coffee)).tags == ["coffee", "mornings"]
    older = {**retagged, "tags": ["an", "old", "draft"], "updated": None}
    assert (await import_text(target, json.dumps(older))).kept == 1
    # Other text under the same id is never taken silently, however new the file says it is.
    rewritten = {
        **line,
        "content": "Prefers light roast coffee now.",
        "updated": (soon + timedelta(minutes=1)).isoformat(),
    }
    conflict = await import_text(target, json.dumps(rewritten))
    assert conflict.conflicts == 1 and conflict.conflicting == [(1, coffee)] and conflict.updated == 0
    assert "1 conflicts" in conflict.summary()
    assert (await target.engine.get(coffee)).content.startswith("Prefers dark")
    future = {**rewritten, "updated": "2999-01-01T00:00:00.000000Z"}
    assert "future" in dict((await import_text(target, json.dumps(future))).refused)[1]
    replaced = await import_text(target, json.dumps(rewritten), replace_conflicts=True)
    assert replaced.replaced == 1 and (await target.engine.get(coffee)).content == "Prefers light roast coffee now."
    assert (await target.engine.search(SearchRequest("how does the user take coffee now?"))).results[
        0
    ].memory_id == coffee


async def test_the_reference_memory_servers_knowledge_graph(runtimes: tuple[Runtime, Runtime]) -> None:
    _, target = runtimes
    report = await import_text(target, KNOWLEDGE_GRAPH + '\n{"type": "entity", "name": ""}\n')
    assert report.source == "knowledge-graph"
    assert report.added == 4 and [line for line, _ in report.refused] == [4]
    page = await target.engine.bulk.browse(None, 0, 10)
    by_content = {m.content: m for m in page.memories}
    assert by_content["John_Smith: Speaks fluent Spanish"].tags == ("John_Smith", "person")
    assert by_content["Anthropic is a organization."].tags == ("Anthropic", "organization")
    assert by_content["John_Smith works_at Anthropic"].tags == ("John_Smith", "Anthropic")
    assert by_content["John_Smith works_at Anthropic"].type == "relation"
    found = await target.engine.search(SearchRequest("where does John work?"))
    assert found.results[0].content == "John_Smith works_at Anthropic"
    again = await import_text(target, KNOWLEDGE_GRAPH)
    assert again.added == 0 and again.unchanged == 4


async def test_history_goes_out_and_comes_back(runtimes: tuple[Runtime, Runtime]) -> None:
    source, target = runtimes
    assert source.history is not None
    await source.history.history.append("chat-1", "user", "What should I cook tonight?")
    await source.history.history.append("chat-1", "assistant", "How about a mushroom risotto?")
    await source.history.history.append("chat-2", "user", "Remind me about the dentist.")
    await source.engine.store(StoreRequest("Likes risotto"))
    text = await export_text(source, history=True)
    assert json.loads(text.splitlines()[0])["counts"] == {"memories": 1, "turns": 3}
    report = await import_text(target, text)
    assert report.added == 1 and report.turns_added == 3
    assert [t.text for t in (await target.history.history.get("chat-1")).turns] == [
        "What should I cook tonight?",
        "How about a mushroom risotto?",
    ]
    assert await turn_reader(target.history.history).conversations() != []
    again = await import_text(target, text)
    assert again.turns_added == 0 and again.turns_unchanged == 3


async def test_a_full_quota_stops_between_batches_with_nothing_half_written(runtimes: tuple[Runtime, Runtime]) -> None:
    _, target = runtimes
    target.engine.policy = dataclasses.replace(EnginePolicy(), max_memories=BATCH + 10)
    lines = [json.dumps({"kind": "memory", "content": f"Quota note number {i}"}) for i in range(BATCH + 40)]
    report = await import_text(target, "\n".join(lines))
    assert report.added == BATCH and report.stopped and "quota" in report.stopped.lower()
    assert f"line {BATCH + 1}" in report.stopped
    assert await target.engine.count() == BATCH


def run(data: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHROMADB_PATH": str(data), "SYMBIOTE_MODEL_DIR": str(MODEL_DIR), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "symbiote", *args], env=env, capture_output=True, text=True, timeout=180, input=stdin
    )


@pytest.mark.slow
def test_the_export_and_import_commands(tmp_path: Path, model_dir: Path) -> None:
    graph = tmp_path / "memory.jsonl"
    graph.write_text(KNOWLEDGE_GRAPH + "\nnot json\n")
    imported = run(tmp_path / "a", "import", str(graph))
    assert imported.returncode == 0, imported.stderr
    assert (
        "4 added, 0 unchanged, 0 updated, 1 refused." in imported.stdout and "line 4: not valid JSON" in imported.stdout
    )
    out = tmp_path / "out" / "export.jsonl"
    exported = run(tmp_path / "a", "export", "--out", str(out), "--with-vectors", "--with-history")
    assert exported.returncode == 0, exported.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["vectors"] is True
    dry = run(tmp_path / "b", "import", str(out), "--dry-run")
    assert dry.returncode == 0 and "Dry run: 4 would be added" in dry.stdout
    assert run(tmp_path / "b", "export", "--out", "-").stdout.count("\n") == 1  # the dry run stored nothing
    assert run(tmp_path / "b", "import", str(out)).returncode == 0
    assert memory_lines(run(tmp_path / "b", "export", "--out", "-").stdout) == memory_lines(
        run(tmp_path / "a", "export", "--out", "-").stdout
    )
    missing = run(tmp_path / "b", "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "is not a file" in missing.stderr


async def test_one_line_that_is_not_text_is_refused_alone_and_the_rest_imported(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    """Issue 58: edb1c0f stopped the whole import at a lone-surrogate tag ("nothing from line 1 on was written")."""
    _source, target = runtimes
    lines = [
        '{"kind":"memory","content":"my bike is blue","tags":["bikes"]}',
        '{"kind":"memory","content":"my car is red","tags":["t\\ud800"]}',
        '{"kind":"memory","content":"my boat is green","metadata":{"conversation_id":"c\\udc00"}}',
        '{"kind":"memory","content":"my kite is yellow"}',
    ]
    report = await import_text(target, "\n".join(lines))
    assert (report.added, report.stopped) == (2, None)
    assert [number for number, _why in report.refused] == [2, 3]
    assert "tag 1 is not valid Unicode text" in report.refused[0][1]
    assert (await target.engine.stats()).total_memories == 2


@pytest.mark.slow
def test_symbiote_export_gets_every_memory_out_of_a_store_edb1c0f_left_broken(tmp_path: Path, model_dir: Path) -> None:
    from tests.storage.test_additions import _broken_store

    exported = run(_broken_store(tmp_path), "export", "--out", "-")
    assert exported.returncode == 0, exported.stderr
    header, line = (json.loads(text) for text in exported.stdout.splitlines())
    assert header["counts"]["memories"] == 1
    assert (line["id"], line["content"], line["tags"]) == ("mem_17961569649291019792", "my bike is blue", ["t\ufffd"])
    back = tmp_path / "export.jsonl"
    back.write_text(exported.stdout)
    imported = run(tmp_path / "fresh", "import", str(back))
    assert imported.returncode == 0 and "1 added" in imported.stdout, imported.stdout + imported.stderr


async def test_a_vector_that_is_not_a_number_refuses_its_line_and_the_rest_is_imported(
    runtimes: tuple[Runtime, Runtime],
) -> None:
    """Issue 67 L10: one NaN in an exported vector stopped the whole import ("Check that the disk has space")."""
    import base64

    source, target = runtimes
    await fill(source)
    lines = (await export_text(source, vectors=True)).splitlines()
    spoilt = next(n for n, line in enumerate(lines) if json.loads(line).get("kind") == "memory")
    record = json.loads(lines[spoilt])
    row = np.frombuffer(base64.b64decode(record["vectors"][0]), dtype="<f4").copy()
    row[7] = np.nan
    record["vectors"][0] = base64.b64encode(row.tobytes()).decode("ascii")
    lines[spoilt] = json.dumps(record)
    report = await import_text(target, "\n".join(lines) + "\n")
    assert report.added == 3 and report.refused_count == 1
    ((line, reason),) = report.refused
    assert line == spoilt + 1 and "not a number" in reason and "vectors" in reason
    assert (await target.engine.stats()).total_memories == 3


async def test_a_file_that_does_not_begin_as_an_export_is_refused_whole(runtime: Runtime) -> None:
    for text in ["x" * (8 * 1024 * 1024 + 10) + "\n", '[1, 2]\n{"content": "later"}\n', '{"name": "a list"}\n']:
        with pytest.raises(NotAnExportError, match=NOT_AN_EXPORT.split(",")[0]):
            await import_text(runtime, text)
    assert (await runtime.engine.stats()).total_memories == 0


async def test_the_same_text_twice_in_a_file_is_stored_once_and_a_turn_without_history_is_refused_alone(
    runtime: Runtime,
) -> None:
    text = "\n".join(
        [
            '{"kind":"memory","content":"The canoe is red","tags":["boats"]}',
            '{"kind":"memory","content":"The canoe is red","tags":["boats"]}',
            '{"kind":"turn","conversation_id":"chat-1","role":"user","content":"hello"}',
        ]
    )
    importer = Importer(runtime.engine.bulk, None)
    report = await importer.run(io.BytesIO(text.encode()))
    assert (report.added, report.unchanged) == (1, 1)
    assert report.refused == [(3, "conversation turns cannot be imported here (no conversation history)")]
    assert (await runtime.engine.stats()).total_memories == 1


async def test_a_made_id_another_text_holds_moves_to_the_next_and_both_are_kept(runtime: Runtime) -> None:
    created = "2025-05-01T10:00:00Z"
    created_us = int(datetime(2025, 5, 1, 10, tzinfo=UTC).timestamp() * 1_000_000)

    def made(text: str, attempt: int = 0) -> str:
        return f"mem_{created_us:016d}{(int(content_hash(text)[:8], 16) + attempt) % 10_000:04d}"

    first, second = "The trailer hitch is in the shed", "The spare paddle is behind the door"
    # another text, stored under the id the import would make for `first`
    report = await import_text(runtime, json.dumps({"id": made(first), "content": second, "created": created}))
    assert report.added == 1
    # in one file: `first` with no id (its made id is taken in the store: it takes the next), a line
    # naming the id the import would make for `second`, then `second` again with no id (stored already)
    lines = [
        json.dumps({"content": first, "created": created}),
        json.dumps({"id": made(second), "content": "The boat hook hangs by the gate", "created": created}),
        json.dumps({"content": second, "created": created, "tags": ["again"]}),
    ]
    report = await import_text(runtime, "\n".join(lines))
    assert (report.added, report.unchanged, report.refused_count) == (2, 1, 0)
    got = await runtime.engine.bulk.fetch([made(first), made(first, 1), made(second)])
    assert got[made(first)].content == second and got[made(first, 1)].content == first
    assert got[made(second)].content == "The boat hook hangs by the gate"
    assert (await runtime.engine.stats()).total_memories == 3


async def test_each_malformed_field_of_a_memory_line_refuses_that_line_alone_saying_which(runtime: Runtime) -> None:
    import base64

    good = base64.b64encode(np.ones(MODEL_DIMENSION, dtype="<f4").tobytes()).decode("ascii")
    short = base64.b64encode(np.ones(8, dtype="<f4").tobytes()).decode("ascii")
    own = "mem_17321234567890120042"
    lines = [
        {
            "format": "symbiote-memories",
            "version": 2,
            "model": MODEL_NAME,
            "dimension": MODEL_DIMENSION,
            "vectors": True,
        },
        {"kind": "memory", "content": "The kettle is descaled monthly", "vectors": [good]},
        {"kind": "memory", "content": "a", "created": 5},
        {"kind": "memory", "content": "b", "vectors": []},
        {"kind": "memory", "content": "c", "vectors": ["not base64!"]},
        {"kind": "memory", "content": "d", "vectors": [short]},
        {"kind": "memory", "content": "e", "links": ["mem_1"]},
        {"kind": "memory", "content": "f", "links": {"kind": "moved"}},
        {"kind": "memory", "content": "g", "metadata": "bookmarked"},
        {"kind": "memory", "content": "h", "created": "1969-12-31T23:59:59Z"},
        {"kind": "memory", "id": own, "content": "i", "links": {"supersedes": own, "kind": "update"}},
        {"kind": "memory", "content": "The toaster's crumb tray slides out", "links": {"kind": "update"}},
    ]
    report = await import_text(runtime, "\n".join(json.dumps(line) for line in lines))
    assert report.refused == [
        (3, "created must be an ISO-8601 time like 2026-01-31T09:30:00.000000Z"),
        (4, "vectors must be a non-empty list of base64 float32 strings"),
        (5, "vector 1 is not base64"),
        (6, f"vector 1 has 8 dimensions, the header says {MODEL_DIMENSION}"),
        (7, "links must be an object"),
        (8, "links.kind must be 'update' or 'duplicate'"),
        (9, "metadata must be an object"),
        (10, "times must be after 1970"),
        (11, "a memory cannot be linked to itself"),
    ]
    assert report.added == 2  # the first and the last: links naming no memory are no links
