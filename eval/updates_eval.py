"""Memory that stays true: is the newer fact shown first, the older one marked, a duplicate shown once?

`updates_set.json` holds 20 owners, each with memories stored in order: facts, later facts that
update them (a new city, job, coach, dose, schedule, budget...; phrased many ways, some naming the
old value and some not), a fact stored again reworded or with a detail added, look-alike controls
(same shape, different subject: a sister in Hamburg and a brother in Munich) and other memories
between. The owners are split ONCE into a fitting and a held-out half, as in `owners_set.json`:
set constants on `fit`, report both; a gap between them is tuning, not generalization.

Runs the real engine in-process (real model, real Chroma, default cut-off, limit 5), one new store
per owner (optionally after `--pad K` unrelated chat turns from `chatter.json`). Metrics per half:

  newer_first   an update's question puts the newer memory in view (results, then below_cutoff), above
                the older one if that is in view too
  marked        the older memory carries superseded_by = the newer one (get_memory)
  dup_once      a duplicate is linked to its first version, or the store returned the existing one
  dup_fuller    its question puts the fuller version (more content words) in view above the other, or alone
  control_links look-alike pairs linked (must be 0)
  other_links   links the server made that are neither an update nor a duplicate of the set
  update_free_links  links made in stores that hold no update at all: the relevance sets' owners
                (`owners_set.json`, by half) and, with the fitting half, `personal_set.json`'s 90
  offered       the older memory auto-linked, or listed in the newer one's `may_replace`, when the
                newer one is stored (what an assistant is given to confirm)
  other_offers  `may_replace` entries in the update set that are no update or duplicate of the set
  free_offer_rate    share of the update-free stores' store calls whose `may_replace` is not empty
  free_offer_mean    `may_replace` entries per store call there (and per non-empty one: free_offer_size)
  confirmed_first    newer_first when a scripted assistant passes `replaces=[the true older memory]`
                with each update (and confirms nothing else), as the protocol asks

    .venv/bin/python eval/updates_eval.py                 # both halves
    .venv/bin/python eval/updates_eval.py --half fit --verbose
    .venv/bin/python eval/updates_eval.py --batch --no-confirm   # each owner in one store_memories
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from personal_set import new_engine

from symbiote.memory import SearchRequest, StoreRequest
from symbiote.storage import query_terms


def content_words(text: str) -> set[str]:
    return set(query_terms(text))


HERE = Path(__file__).resolve().parent
HALVES = ("fit", "held")
BATCH = False  # --batch: each owner's memories in one store_memories call


async def _in_view(engine: Any, query: str) -> list[str]:
    """What a search puts in view, in order: the results, then `below_cutoff`."""
    found = await engine.search(SearchRequest(query))
    return [r.memory_id for r in found.results + found.below_cutoff]


def _link(memory: Any) -> tuple[str | None, str | None]:
    """(supersedes, superseded_by); a checkout from before links has neither."""
    return getattr(memory, "supersedes", None), getattr(memory, "superseded_by", None)


def _offers(result: Any) -> list[str]:
    """The ids a store result offers (none from a checkout from before offers)."""
    return [m.memory_id for m in getattr(result, "may_replace", [])]


async def _owner(engine: Any, owner: dict[str, Any], tally: Counter[str], verbose: bool, confirm: bool) -> None:
    ids: dict[str, str] = {}
    returned_existing: set[str] = set()
    offered: dict[str, list[str]] = {}
    older_of = {case["new"]: case["old"] for case in owner["updates"]}
    batch = (
        []
        if confirm or not BATCH
        else (await engine.store_many([{"content": m["text"]} for m in owner["memories"]])).results
    )
    for position, memory in enumerate(owner["memories"]):
        if batch:
            result = batch[position]
        elif confirm and memory["id"] in older_of:  # the assistant knows what changed: it says so
            result = await engine.store(StoreRequest(memory["text"], replaces=[ids[older_of[memory["id"]]]]))
        else:
            result = await engine.store(StoreRequest(memory["text"]))
        ids[memory["id"]] = result.memory_id
        offered[memory["id"]] = _offers(result)
        if result.status == "duplicate":
            returned_existing.add(memory["id"])
    await engine.passages_indexed()
    text = {m["id"]: m["text"] for m in owner["memories"]}
    got = {key: await engine.get(mid) for key, mid in ids.items()}
    expected: set[frozenset[str]] = set()
    for case in owner["updates"]:
        old, new = ids[case["old"]], ids[case["new"]]
        expected.add(frozenset((old, new)))
        order = await _in_view(engine, case["query"])
        first = new in order and (old not in order or order.index(new) < order.index(old))
        marked = _link(got[case["old"]])[1] == new
        tally["updates"] += 1
        tally["newer_first"] += first
        tally["marked"] += marked
        tally["offered"] += marked or old in offered[case["new"]]
        if verbose and not (marked or old in offered[case["new"]]):
            print(f"  {owner['owner']} update {case['old']}->{case['new']} NOT OFFERED")
        if verbose and not (first and marked):
            shown = [next((k for k, v in ids.items() if v == mid), "?") for mid in order]
            print(f"  {owner['owner']} update {case['old']}->{case['new']} first={first} marked={marked} {shown}")
    for case in owner["duplicates"]:
        one, two = ids[case["first"]], ids[case["second"]]
        expected.add(frozenset((one, two)))
        linked = _link(got[case["first"]])[1] == two or _link(got[case["second"]])[1] == one
        once = linked or case["second"] in returned_existing
        words = {key: len(content_words(text[key])) for key in (case["first"], case["second"])}
        order = await _in_view(engine, case["query"])
        ahead = any(  # the one with more content words above the other, or alone (a reworded one: either)
            ids[fuller] in order and (ids[other] not in order or order.index(ids[fuller]) < order.index(ids[other]))
            for fuller, other in ((case["second"], case["first"]), (case["first"], case["second"]))
            if words[fuller] >= words[other]
        )
        tally["duplicates"] += 1
        tally["dup_once"] += once
        tally["dup_fuller"] += ahead
        if verbose and not (once and ahead):
            print(f"  {owner['owner']} duplicate {case['first']}/{case['second']} once={once} fuller_first={ahead}")
    for case in owner["controls"]:
        a, b = ids[case["a"]], ids[case["b"]]
        linked = b in _link(got[case["a"]]) or a in _link(got[case["b"]])
        tally["controls"] += 1
        tally["control_links"] += linked
        if verbose and linked:
            print(f"  {owner['owner']} FALSE LINK control {case['a']}/{case['b']}")
    controls = {frozenset((ids[c["a"]], ids[c["b"]])) for c in owner["controls"]}
    key_of = {mid: key for key, mid in ids.items()}
    for key, offers in offered.items():
        for mid in offers:
            if frozenset((ids[key], mid)) not in expected:
                tally["other_offers"] += 1
                if verbose:
                    print(f"  {owner['owner']} offered {key_of.get(mid, mid)} with {key}")
    for key, memory in got.items():
        newer = _link(memory)[1]
        if newer and frozenset((ids[key], newer)) not in expected | controls:
            tally["other_links"] += 1
            if verbose:
                print(f"  {owner['owner']} FALSE LINK {key} superseded_by {newer}")


async def _links_without_updates(texts: list[str]) -> Counter[str]:
    """Links made among memories that update nothing (every one of them is a false link), and the
    offers their stores made (each one a question the assistant is asked for nothing)."""
    tally: Counter[str] = Counter()
    with new_engine() as engine:
        for text in texts:
            offers = _offers(await engine.store(StoreRequest(text)))
            tally["free_stores"] += 1
            tally["free_offering"] += bool(offers)
            tally["free_offers"] += len(offers)
        tally["update_free_links"], _to_review = await engine.links.count()
    return tally


def _update_free(half: str) -> list[list[str]]:
    """The relevance sets' stores, which hold no updates: each owner of `owners_set.json` in this
    half, and (with the fitting half) the 90 memories of `personal_set.json`."""
    owners = json.loads((HERE / "owners_set.json").read_text())["owners"]
    stores = [[m["text"] for m in o["memories"]] for o in owners if o["half"] == half]
    if half == "fit":
        stores.append([text for _key, text in json.loads((HERE / "personal_set.json").read_text())["memories"]])
    return stores


async def _run(owners: list[dict[str, Any]], pad: int, verbose: bool, confirm: bool = False) -> Counter[str]:
    tally: Counter[str] = Counter()
    chatter = json.loads((HERE / "chatter.json").read_text())[:pad] if pad else []
    for owner in owners:
        with new_engine() as engine:
            for turn in chatter:
                await engine.store(StoreRequest(turn if isinstance(turn, str) else turn["text"]))
            await _owner(engine, owner, tally, verbose and not confirm, confirm)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=(*HALVES, "both"), default="both")
    parser.add_argument("--pad", type=int, default=0, help="unrelated chat turns stored before each owner")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--batch", action="store_true", help="store each owner's memories in one batch")
    parser.add_argument("--no-confirm", action="store_true", help="skip the scripted assistant's run (replaces)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    global BATCH
    BATCH = args.batch
    data = json.loads((HERE / "updates_set.json").read_text())
    halves = HALVES if args.half == "both" else (args.half,)
    figures: dict[str, dict[str, float]] = {}
    for half in halves:
        owners = [o for o in data["owners"] if o["half"] == half]
        tally = asyncio.run(_run(owners, args.pad, args.verbose))
        for texts in _update_free(half):
            tally.update(asyncio.run(_links_without_updates(texts)))
        if not args.no_confirm:
            confirmed = asyncio.run(_run(owners, args.pad, args.verbose, confirm=True))
            tally["confirmed_first"] = confirmed["newer_first"]
        stores = max(tally["free_stores"], 1)
        figures[half] = {
            "offered": tally["offered"] / max(tally["updates"], 1),
            "confirmed_first": tally["confirmed_first"] / max(tally["updates"], 1),
            "newer_first": tally["newer_first"] / max(tally["updates"], 1),
            "marked": tally["marked"] / max(tally["updates"], 1),
            "dup_once": tally["dup_once"] / max(tally["duplicates"], 1),
            "dup_fuller": tally["dup_fuller"] / max(tally["duplicates"], 1),
            "control_links": tally["control_links"],
            "other_links": tally["other_links"],
            "update_free_links": tally["update_free_links"],
            "other_offers": tally["other_offers"],
            "free_offer_rate": tally["free_offering"] / stores,
            "free_offer_mean": tally["free_offers"] / stores,
            "free_offer_size": tally["free_offers"] / max(tally["free_offering"], 1),
            "free_stores": tally["free_stores"],
            "updates": tally["updates"],
            "duplicates": tally["duplicates"],
            "controls": tally["controls"],
        }
    print(f"{'':18}" + "".join(f"{h:>10}" for h in halves))
    rows = ("newer_first", "marked", "offered", "confirmed_first", "dup_once", "dup_fuller", "control_links")
    rows += ("other_links", "update_free_links", "other_offers", "free_offer_rate", "free_offer_mean")
    for row in (*rows, "free_offer_size", "free_stores"):
        cells = "".join(
            f"{figures[h][row]:>10.2f}" if isinstance(figures[h][row], float) else f"{figures[h][row]:>10}"
            for h in halves
        )
        print(f"{row:18}{cells}")
    print(
        "cases: "
        + ", ".join(
            f"{h}: {figures[h]['updates']} updates, {figures[h]['duplicates']} duplicates, "
            f"{figures[h]['controls']} controls"
            for h in halves
        )
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
