"""The kill phase: SIGTERM once, then rounds of kill -9, each during concurrent writers (HTTP and SSE).
A write the server acknowledged must survive anything: after each, a restart on the same store must open
cleanly, hold every acknowledged write with its content, and find a sample by search."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from typing import Any

from loadtest.clients import CALL_TIMEOUT, Notes, Session, Tally, searchable, store, texts, verify
from loadtest.report import header, loadavg
from loadtest.server import LoadServer

WRITERS = ["sse"] * 2 + ["http"] * 6  # concurrent writers in each round
PROBLEMS = (" ERROR ", " CRITICAL ", "Traceback")  # in the server log
KILL_AFTER = (1.0, 5.0)  # seconds of writes before the signal, drawn at random
SEARCH_SAMPLE = 10  # acknowledged memories searched by their text after each restart


def _problems(text: str) -> list[str]:
    """The log's errors and tracebacks."""
    return [line[:200] for line in text.splitlines() if any(p in line for p in PROBLEMS)]


async def _writer(url: str, kind: str, notes: Notes, tally: Tally) -> None:
    with contextlib.suppress(Exception):  # the server going away mid-call is the point
        async with Session(url, kind) as session:
            while await store(session, tally, notes) is not None:
                pass


async def _round(number: int, server: LoadServer, rng: random.Random, earlier: dict[str, str]) -> dict[str, Any]:
    """Writers, the signal at a random moment, a restart on the same store, and the checks: the round's row."""
    tally = Tally()
    writers = [
        asyncio.create_task(_writer(server.url, k, texts(f"kill{number}w{i}"), tally)) for i, k in enumerate(WRITERS)
    ]
    row: dict[str, Any] = {"round": number, "how": "kill -9" if number else "SIGTERM"}
    row["after_s"] = round(rng.uniform(*KILL_AFTER), 2)
    await asyncio.sleep(row["after_s"])
    row["acked_at_signal"] = len(tally.acked)
    if number == 0:
        signalled = time.monotonic()
        row["exit_code"] = await asyncio.to_thread(server.stop)
        row["exit_s"] = round(time.monotonic() - signalled, 2)
        row["shutdown_log_problems"] = _problems(server.boot_log().split(" Shutting down", 1)[-1])[:3]
    else:
        server.kill9()
    await asyncio.wait(writers, timeout=CALL_TIMEOUT)  # each ends on its first failed call
    acked = dict(tally.acked)  # an answer that arrived is acknowledged, even after the signal
    # after SIGTERM, everything from the earlier phases is checked too
    check = acked | earlier if number == 0 else acked
    try:
        row["ready_s"] = round(server.start(), 1)
        health = server.health()
        problems = _problems(server.boot_log())
        missing, unchecked = await verify(server.url, check)
        found, checked = await searchable(server.url, acked, SEARCH_SAMPLE, rng)
    except RuntimeError as exc:  # it did not come back: every write of the round counts as lost
        health, problems, missing, unchecked, found, checked = {}, [str(exc)], list(check), [], 0, 0
        row["ready_s"] = None
    row |= {"acked": len(acked), "checked": len(check), "lost": len(missing), "unchecked": len(unchecked)}
    row |= {"store": health.get("store"), "memories": health.get("memories"), "log_problems": problems[:3]}
    row |= {"clean": health.get("store") == "ready" and not problems, "searchable": f"{found}/{checked}"}
    row["acked_ids"] = acked
    if not acked:  # nothing written: say why
        print("\n".join(f"      {count} x {what}" for what, count in tally.errors.most_common(3)))
    return row


async def phase_kill(
    args: argparse.Namespace, server: LoadServer, earlier: dict[str, str], out: dict[str, Any]
) -> dict[str, str]:
    header(f"kill: SIGTERM once, then {args.kill_rounds} rounds of kill -9, each during {len(WRITERS)} writers")
    rng = random.Random(3)
    all_acked: dict[str, str] = {}
    rounds = []
    for number in range(args.kill_rounds + 1):
        row = await _round(number, server, rng, earlier)
        all_acked |= row.pop("acked_ids")
        rounds.append(row)
        exit_text = "" if number else f"exit code {row['exit_code']} after {row['exit_s']} s, "
        exit_text += "" if number else f"shutdown log {row['shutdown_log_problems'] or 'clean'}, "
        print(
            f"  round {number:>2} ({row['how']} after {row['after_s']} s): {row['acked']} acknowledged "
            f"({row['acked'] - row['acked_at_signal']} answered after the signal), checked {row['checked']}, "
            f"lost {row['lost']}; {exit_text}restart ready in {row['ready_s']} s, store {row['store']!r}, "
            f"found by search {row['searchable']}, log {row['log_problems'] or 'clean'}  [load {loadavg()}]",
            flush=True,
        )
        if row["ready_s"] is None:
            break
    kills = rounds[1:]
    out["sigterm"] = rounds[0]
    out["kill"] = {
        "rounds": kills,
        "acked": sum(r["acked"] for r in kills),
        "lost": sum(r["lost"] for r in kills),
        "clean": sum(r["clean"] for r in kills),
        "loadavg": loadavg(),
    }
    print(
        f"  kill -9: {len(kills)} rounds, {out['kill']['acked']} writes acknowledged, {out['kill']['lost']} lost; "
        f"store opened cleanly after {out['kill']['clean']}/{len(kills)}"
    )
    return all_acked
