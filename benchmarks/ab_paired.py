"""Two checkouts of Symbiote side by side, running at once, their searches alternated one by one.

A shared machine's speed moves from minute to minute (other tenants take its cores), so even
interleaved server starts can land a burst of noise on one side. Here both
servers run together on the same LoCoMo conversation: every turn is stored in both, then every
question is asked of one and straight away of the other (which goes first alternates), so each
pair of searches meets the same moment of the machine. Prints each side's search and store
p50 / p95 and the median of the paired differences (second minus first).

    .venv/bin/python benchmarks/ab_paired.py OLD_CHECKOUT NEW_CHECKOUT --data LOCOMO_DIR [--rounds 3] [--file 26.json]

e.g. `git worktree add /tmp/old <commit> && ln -s "$PWD/models" /tmp/old/models`, then
`.venv/bin/python benchmarks/ab_paired.py /tmp/old "$PWD"`. Each round asks every question
again with a suffix, so no answer comes from the embedding cache. Both servers index their
passages before the questions; the absolute figures are higher than one server's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# this directory is on sys.path when run as a script
from locomo_data import DATA_DIR, data_dir, load_conversation
from mcp import Client
from mcp_client import passages_indexed
from percentiles import percentile
from server_process import ServerProcess


def _p(values: list[float], q: float) -> float:
    return percentile(values, q) or 0.0


def _server(tree: Path) -> ServerProcess:
    data = Path(tempfile.mkdtemp(prefix="ab-paired-"))
    return ServerProcess(
        data / "chroma",
        log=data / "server.log",
        env={"PYTHONPATH": str(tree)},
        command=[sys.executable, "-m", "symbiote"],
        cwd=tree,
    )


async def _timed(client: Client, tool: str, arguments: dict[str, object]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return (time.perf_counter() - started) * 1000


async def measure(trees: list[Path], rounds: int, path: Path) -> None:
    conv = load_conversation(path)
    servers = [_server(tree) for tree in trees]
    try:
        for server in servers:
            server.start(timeout=120, store=False)
        async with (
            Client(servers[0].mcp_url, read_timeout_seconds=120) as a,
            Client(servers[1].mcp_url, read_timeout_seconds=120) as b,
        ):
            clients = (a, b)
            stores: tuple[list[float], list[float]] = ([], [])
            for turn in conv.turns:
                for side, client in enumerate(clients):
                    stores[side].append(await _timed(client, "store_memory", {"content": turn.memory}))
            for client in clients:
                await passages_indexed(client)
            searches: tuple[list[float], list[float]] = ([], [])
            for rnd in range(rounds):
                for i, q in enumerate(conv.questions):
                    query = q.question + (f" ({rnd})" if rnd else "")
                    for side in (0, 1) if (i + rnd) % 2 == 0 else (1, 0):
                        searches[side].append(
                            await _timed(clients[side], "search_memory", {"query": query, "limit": 10})
                        )
    finally:
        for server in servers:
            server.stop()
    for side, tree in enumerate(trees):
        s, w = searches[side], stores[side]
        print(
            f"{tree}: search p50 / p95 {_p(s, 50):.2f} / {_p(s, 95):.2f} ms (n={len(s)}); "
            f"store {_p(w, 50):.2f} / {_p(w, 95):.2f} ms"
        )
    paired = [new - old for old, new in zip(*searches)]
    print(
        f"paired difference (second - first): median {statistics.median(paired):+.2f} ms; p50 ratio "
        f"{_p(searches[1], 50) / _p(searches[0], 50):.3f}, p95 ratio "
        f"{_p(searches[1], 95) / _p(searches[0], 95):.3f}; load average {os.getloadavg()[0]:.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=3, help="times every question is asked of each (default 3)")
    parser.add_argument("--file", default="26.json", help="the LoCoMo conversation (default: 26.json)")
    parser.add_argument(
        "--data", type=Path, default=DATA_DIR, help="the LoCoMo directory (default: $SYMBIOTE_LOCOMO_DIR)"
    )
    args = parser.parse_args(argv)
    conversation = data_dir(args.data) / args.file
    asyncio.run(measure([args.old.resolve(), args.new.resolve()], args.rounds, conversation))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
