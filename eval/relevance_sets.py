"""Every query of the relevance sets, asked of the real engine in every kind of store, kept with its
candidates: what `calibrate_relevance.py` fits on and what `owners_eval.py` reports.

Store kinds (the relevance issue's): `small` (a query's owner alone: 3 of their memories, and all
7-12 of them; the holder cases' 3-5), `facts100` (the 90 memories of `personal_set.json`),
`turns400` (an owner's memories after 400 LoCoMo turns stored as `locomo.py` stores them, with their
times and speaker names), `mixed400` (after 400 turns from three sources: LoCoMo turns, `chatter.json`
and the assistant-written `summaries.json`), `5000` (after 5,000 of all of them, pairs of chatter
joined past what there is) and `locomo` (a LoCoMo conversation's own questions). Everything is split
once, by owner, holder case, personal query (by position: even fit, odd held) and LoCoMo
conversation (26 fit, 30 held); the padding too: the fitting half's stores are padded with LoCoMo 26,
the first half of the chatter and of the summaries, the held-out half's with the rest.

    .venv/bin/python eval/relevance_sets.py --out asked.pickle [--kinds small,turns400] [--locomo DIR] [--form clock]

LoCoMo's turns are stored as "8 May 2023 Melanie: ..." unless `--form` says otherwise (`clock`: as the
files give them, "1:56 pm on 8 May, 2023 Melanie: ..."; `speaker`: "Melanie: ..."; `none`: the words alone).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import random
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# What the timing benchmarks share with the sets: the LoCoMo loader and the synthetic notes.
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import locomo_data
from personal_set import new_engine

from symbiote.memory import SearchRequest, StoreRequest
from symbiote.retrieval import ranking

HERE = Path(__file__).resolve().parent
KINDS = ("small", "facts100", "turns400", "mixed400", "5000", "locomo")
PERSONAL_KINDS = {  # personal_set's query kinds as the owners' kinds
    "attribute": "direct",
    "assistant": "phrase",
    "vague": "phrase",
    "task": "task",
    "message": "task",
    "unknown_attribute": "never_on",
    "never": "never_off",
    "unrelated": "never_off",
}
BATCH = 100
FORM = "date"  # how LoCoMo's turns are worded (`locomo_data.FORMS`); --form


@dataclass
class Asked:
    store: str  # one of KINDS
    kind: str  # direct, phrase, task, never_on, never_off, holder_owner, holder_other, locomo
    half: str  # fit or held
    query: str
    evidence: ranking.QueryEvidence
    candidates: list[ranking.Candidate]
    wanted: set[str]
    texts: dict[str, str]  # memory id -> text, for every candidate
    padding: set[str]  # candidates that are padding, not the owner's own memories
    results: list[tuple[str, float, str]]  # what search_memory returned (limit 5): id, score, match
    offered: list[tuple[str, float, str]]  # and offered under the cut-off (`below_cutoff`)
    ranked: list[str]  # the first 5 at min_relevance=0: the engine's ranking


@dataclass(frozen=True)
class Case:
    """A set of memories and the queries asked of them (an owner, a holder case)."""

    key: str
    half: str
    memories: dict[str, str]
    queries: list[tuple[str, str, tuple[str, ...]]]  # kind, text, wanted keys


def owners() -> list[Case]:
    """The owners, each also asked two off-topic requests (`off_topic.json`, from its half's share)."""
    off = json.loads((HERE / "off_topic.json").read_text())["queries"]
    pools = {"fit": off[: len(off) // 2], "held": off[len(off) // 2 :]}
    cases = []
    for index, o in enumerate(json.loads((HERE / "owners_set.json").read_text())["owners"]):
        pool = pools[o["half"]]
        extra = [("never_off", pool[(2 * index + k) % len(pool)], ()) for k in range(2)]
        queries = [(q["kind"], q["text"], tuple(q["wanted"])) for q in o["queries"]]
        cases.append(Case(o["owner"], o["half"], {m["id"]: m["text"] for m in o["memories"]}, queries + extra))
    return cases


def holders() -> list[Case]:
    path = HERE / "holders_set.json"
    if not path.exists():
        return []
    return [
        Case(
            c["id"],
            c["half"],
            {m["id"]: m["text"] for m in c["memories"]},
            [(f"holder_{q['about']}", q["text"], tuple(q["wanted"])) for q in c["queries"]],
        )
        for c in json.loads(path.read_text())["cases"]
    ]


def personal() -> Case:
    data = json.loads((HERE / "personal_set.json").read_text())
    return Case(
        "personal",
        "both",
        dict(data["memories"]),
        [(PERSONAL_KINDS[kind], text, tuple(wanted)) for kind, text, wanted in data["queries"]],
    )


def padding_sources(half: str, locomo_dir: Path) -> dict[str, list[str]]:
    conv = "26" if half == "fit" else "30"
    turns = [t.in_form(FORM) for t in locomo_data.load_conversation(locomo_dir / f"{conv}.json").turns]
    chatter = json.loads((HERE / "chatter.json").read_text())["turns"]
    summaries_path = HERE / "summaries.json"
    summaries = json.loads(summaries_path.read_text())["summaries"] if summaries_path.exists() else []

    def split(texts: list[str]) -> list[str]:
        middle = len(texts) // 2
        return texts[:middle] if half == "fit" else texts[middle:]

    return {"locomo": turns, "chatter": split(chatter), "summaries": split(summaries)}


def padding(store: str, sources: dict[str, list[str]]) -> list[str]:
    if store == "turns400":
        return sources["locomo"][:400]
    rng = random.Random(f"{store}")
    if store == "mixed400":
        summaries = sources["summaries"][:125]
        chatter = sources["chatter"][: 400 - 150 - len(summaries)]
        texts = sources["locomo"][:150] + chatter + summaries
        rng.shuffle(texts)
        return texts
    every = sources["locomo"] + sources["chatter"] + sources["summaries"]
    texts, seen = list(every), set(every)
    while len(texts) < 5000:
        text = " ".join(rng.sample(sources["chatter"], 2))
        if text not in seen:
            seen.add(text)
            texts.append(text)
    rng.shuffle(texts)
    return texts[:5000]


class Collector:
    """One engine for one store kind: the padding stored once, each case's memories added, asked, removed."""

    def __init__(self, engine: Any, store: str) -> None:
        self.engine = engine
        self.store = store
        self.text_of: dict[str, str] = {}
        self.padding: set[str] = set()
        self.asked: list[Asked] = []

    async def add(self, texts: list[str]) -> list[str]:
        ids: list[str] = []
        for start in range(0, len(texts), BATCH):
            result = await self.engine.store_many(texts[start : start + BATCH])
            for text, stored in zip(texts[start : start + BATCH], result.results):
                self.text_of[stored.memory_id] = text
                ids.append(stored.memory_id)
        await self.engine.passages_indexed()
        return ids

    async def pad(self, texts: list[str]) -> None:
        self.padding.update(await self.add(texts))

    async def ask(self, kind: str, half: str, text: str, wanted: set[str]) -> None:
        candidates, evidence = await self.engine.rank(text)
        texts = {c.memory_id: self.text_of.get(c.memory_id, "") for c in candidates}
        pad = {c.memory_id for c in candidates if c.memory_id in self.padding}
        found = await self.engine.search(SearchRequest(text, limit=5))
        results = [(h.memory_id, h.relevance_score, h.match) for h in found.results]
        offered = [(h.memory_id, h.relevance_score, h.match) for h in found.below_cutoff]
        ranked = [
            h.memory_id for h in (await self.engine.search(SearchRequest(text, limit=5, min_relevance=0))).results
        ]
        self.asked.append(
            Asked(self.store, kind, half, text, evidence, candidates, wanted, texts, pad, results, offered, ranked)
        )

    async def case(self, case: Case, keys: Iterable[str] | None = None, only: int | None = None) -> None:
        """Add the case's memories (or `keys` of them), ask its queries (or query `only`), remove them."""
        chosen = list(keys) if keys is not None else list(case.memories)
        ids = await self.add([case.memories[k] for k in chosen])
        id_of = dict(zip(chosen, ids))
        for index, (kind, text, wanted) in enumerate(case.queries):
            if only is None or index == only:
                half = case.half if case.half != "both" else ("fit" if index % 2 == 0 else "held")
                await self.ask(kind, half, text, {id_of[k] for k in wanted if k in id_of})
        for memory_id in ids:
            await self.engine.delete(memory_id)


async def small(collector: Collector) -> None:
    for case in owners():
        await collector.case(case)  # all 7-12 of them
        for index, (_kind, _text, wanted) in enumerate(case.queries):  # 3 of them, as owners_eval's size 3
            rng = random.Random(f"{case.key}:{index}")
            others = [m for m in case.memories if m not in wanted]
            keys = [wanted[0], *rng.sample(others, 2)] if wanted else rng.sample(others, 3)
            await collector.case(case, keys, only=index)
    for case in holders():
        await collector.case(case)


async def padded(collector: Collector, locomo_dir: Path) -> None:
    for half in ("fit", "held"):
        await collector.pad(padding(collector.store, padding_sources(half, locomo_dir)))
        for case in owners() + holders():
            if case.half == half:
                await collector.case(case)
        for memory_id in list(collector.padding):
            await collector.engine.delete(memory_id)
        collector.padding.clear()


async def locomo(collector: Collector, locomo_dir: Path) -> None:
    for name, half in (("26", "fit"), ("30", "held")):
        conv = locomo_data.load_conversation(locomo_dir / f"{name}.json")
        with new_engine() as engine:
            sub = Collector(engine, "locomo")
            of_turn: dict[str, str] = {}
            for turn in conv.turns:
                stored = await engine.store(StoreRequest(turn.in_form(FORM)))
                sub.text_of[stored.memory_id] = turn.in_form(FORM)
                of_turn.setdefault(turn.dia_id, stored.memory_id)
            await engine.passages_indexed()
            for q in conv.questions:
                await sub.ask("locomo", half, q.question, {of_turn[e] for e in q.evidence if e in of_turn})
            collector.asked += sub.asked


async def collect(store: str, locomo_dir: Path) -> list[Asked]:
    began = time.perf_counter()
    with new_engine() as engine:
        collector = Collector(engine, store)
        if store == "small":
            await small(collector)
        elif store == "facts100":
            await collector.case(personal())
        elif store == "locomo":
            await locomo(collector, locomo_dir)
        else:
            await padded(collector, locomo_dir)
    print(f"{store}: {len(collector.asked)} queries in {time.perf_counter() - began:.0f} s", flush=True)
    return collector.asked


async def main() -> None:
    global FORM
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the pickle to write (one per store kind: OUT.kind)")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--locomo", type=Path, default=locomo_data.DATA_DIR)
    parser.add_argument("--form", choices=locomo_data.FORMS, default=FORM, help="how LoCoMo's turns are worded")
    args = parser.parse_args()
    FORM = args.form
    locomo_dir = locomo_data.data_dir(args.locomo)
    Asked.__module__ = "relevance_sets"  # pickled as this module's, so that other scripts can read them
    sys.modules.setdefault("relevance_sets", sys.modules[__name__])
    for store in args.kinds.split(","):
        asked = await collect(store, locomo_dir)
        Path(f"{args.out}.{store}").write_bytes(pickle.dumps(asked))


def load(prefix: Path, kinds: Iterable[str] = KINDS) -> list[Asked]:
    """Every kind collected under `prefix`."""
    asked: list[Asked] = []
    for store in kinds:
        path = Path(f"{prefix}.{store}")
        if path.exists():
            asked += pickle.loads(path.read_bytes())
    return asked


if __name__ == "__main__":
    asyncio.run(main())
