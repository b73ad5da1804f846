"""The kill phase: SIGTERM once, then rounds of kill -9, each during concurrent writers; after each,
a restart on the same store must open cleanly and hold every acknowledged write.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from typing import Any

from loadtest.calls import Tally, searchable, store, verify
from loadtest.figures import header, loadavg
from loadtest.server import LoadServer
from loadtest.transports import CALL_TIMEOUT, http_client, legacy_sse_client
from loadtest.workload import Texts


def _problems(text: str) -> list[str]:
    return [
        line[:200]
        for line in text.splitlines()
        if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")
    ]


async def _writer(
    args: argparse.Namespace, server: LoadServer, index: int, number: int, tally: Tally, stop: asyncio.Event
) -> None:
    texts = Texts(f"kill{number}w{index}")
    kind = "sse" if index < args.kill_sse_writers else "http"
    client = http_client(server.url) if kind == "http" else legacy_sse_client(server.url)
    with contextlib.suppress(Exception):  # the server going away mid-call is the point
        async with client:
            while not stop.is_set():
                if await store(client, tally, texts) is None:
                    return


async def _interrupt(
    args: argparse.Namespace, server: LoadServer, number: int, rng: random.Random, tally: Tally
) -> dict[str, Any]:
    """Start the writers, then SIGTERM (round 0) or kill -9 the server at a random moment."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_writer(args, server, i, number, tally, stop)) for i in range(args.kill_writers)]
    delay = rng.uniform(args.kill_after_min, args.kill_after_max)
    await asyncio.sleep(delay)
    got: dict[str, Any] = {"delay": delay, "acked_at_signal": len(tally.acked)}
    if number == 0:
        signalled = time.monotonic()
        got["exit_code"] = await asyncio.to_thread(server.stop)
        got["exit_s"] = time.monotonic() - signalled
        got["shutdown_problems"] = _problems(server.boot_log().split(" Shutting down", 1)[-1])
    else:
        server.kill9()
    stop.set()
    await asyncio.wait(tasks, timeout=CALL_TIMEOUT)
    return got


async def _restart(
    args: argparse.Namespace,
    server: LoadServer,
    number: int,
    rng: random.Random,
    acked_round: dict[str, str],
    acked_before: dict[str, str],
) -> dict[str, Any]:
    """Restart on the same store; what it says, what its boot logged, which writes are missing or unfindable."""
    try:
        ready_s = server.start()
        health = server.health()
        problems = _problems(server.boot_log())
        missing, unchecked = await verify(server.url, acked_round)
        if number == 0 and acked_before:  # everything from the earlier phases survives SIGTERM too
            more_missing, more_unchecked = await verify(server.url, acked_before)
            missing += more_missing
            unchecked += more_unchecked
        found, checked = await searchable(server.url, acked_round, args.search_sample, rng)
        clean = health.get("store") == "ready" and not problems
    except RuntimeError as exc:
        ready_s, health, problems, clean = -1.0, {}, [str(exc)], False
        missing, unchecked, found, checked = list(acked_round), [], 0, 0
    return {
        "ready_s": ready_s,
        "health": health,
        "problems": problems,
        "clean": clean,
        "missing": missing,
        "unchecked": unchecked,
        "found": found,
        "checked": checked,
    }


def _report(
    number: int, acked_round: dict[str, str], hit: dict[str, Any], after: dict[str, Any], n_before: int
) -> dict[str, Any]:
    """Print the round's line; its row for the figures."""
    how = "SIGTERM" if number == 0 else "kill -9"
    delay, acked_at_signal = hit["delay"], hit["acked_at_signal"]
    health, problems, missing = after["health"], after["problems"], after["missing"]
    found, checked, ready_s = after["found"], after["checked"], after["ready_s"]
    row = {
        "round": number,
        "how": how,
        "after_s": round(delay, 2),
        "acked": len(acked_round),
        "acked_at_signal": acked_at_signal,
        "lost": len(missing),
        "unchecked": len(after["unchecked"]),
        "ready_s": round(ready_s, 1),
        "store": health.get("store"),
        "clean": after["clean"],
        "log_problems": problems[:3],
        "searchable": f"{found}/{checked}",
        "memories": health.get("memories"),
    }
    line = (
        f"  round {number:>2} ({how} after {delay:.1f} s): {len(acked_round)} acknowledged "
        f"({len(acked_round) - acked_at_signal} of them read after the signal"
        f"{'' if number == 0 else ', sent before it'}), lost {len(missing)}"
    )
    if number == 0:
        exit_code, exit_s, shutdown_problems = hit["exit_code"], hit["exit_s"], hit["shutdown_problems"]
        row.update(
            exit_code=exit_code,
            exit_s=round(exit_s, 2),
            shutdown_log_problems=shutdown_problems[:3],
            earlier_writes_checked=n_before,
        )
        line += (
            f" (and {n_before} from earlier phases checked); exit code {exit_code} after {exit_s:.1f} s"
            f", shutdown log {'clean' if not shutdown_problems else shutdown_problems[:2]}"
        )
    line += (
        f"; restart ready in {ready_s:.1f} s, store {health.get('store')!r}, found by search {found}/{checked}, "
        f"boot log {'clean' if not problems else problems[:1]}  [load {loadavg()}]"
    )
    print(line, flush=True)
    return row


async def phase_kill(
    args: argparse.Namespace, server: LoadServer, acked_before: dict[str, str], out: dict[str, Any]
) -> dict[str, str]:
    header(
        f"kill: SIGTERM once, then {args.kill_rounds} rounds of kill -9, "
        f"each during {args.kill_writers} concurrent writers"
    )
    rng = random.Random(3)
    all_acked: dict[str, str] = {}
    rounds: list[dict[str, Any]] = []
    lost_total = 0
    for number in range(args.kill_rounds + 1):
        tally = Tally(f"round{number}")
        hit = await _interrupt(args, server, number, rng, tally)
        acked_round = dict(tally.acked)  # an answer that arrived is acknowledged, even after the signal
        after = await _restart(args, server, number, rng, acked_round, acked_before)
        lost_total += len(after["missing"])
        all_acked.update(acked_round)
        rounds.append(_report(number, acked_round, hit, after, len(acked_before)))
        if not acked_round:
            for what, count in tally.errors.most_common(3):
                print(f"      {count} x {what}")
        if after["ready_s"] < 0:
            break
    kills = [r for r in rounds if r["round"] > 0]
    clean_rounds = sum(1 for r in kills if r["clean"])
    print(
        f"  kill -9: {len(kills)} rounds, {sum(r['acked'] for r in kills)} writes acknowledged, "
        f"{sum(r['lost'] for r in kills)} lost; store opened cleanly after {clean_rounds}/{len(kills)}"
    )
    out["sigterm"] = rounds[0] if rounds else None
    out["kill"] = {
        "rounds": kills,
        "acked": sum(r["acked"] for r in kills),
        "lost": sum(r["lost"] for r in kills),
        "clean": clean_rounds,
        "loadavg": loadavg(),
    }
    out["kill_lost_including_sigterm"] = lost_total
    return all_acked
