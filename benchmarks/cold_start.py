"""Process start to first answered search_memory (and to initialize), over real HTTP.

Usage: .venv/bin/python benchmarks/cold_start.py [--runs 5] [--data DIR]
Prints per-run figures and the median. The data directory is reused across runs, so the store
exists already (the usual case: a restart or a wake from zero). The first start on a data
directory is measured on its own: it has no handshake cache yet (`symbiote.fastboot.handshake`), so
`initialize` waits for the MCP SDK's import; it then stays up until the cache is recorded.

The client's HTTP stack (an httpx client, whose TLS context costs noticeable CPU) is built before
the server process starts, as a real client's is long before it connects: built after, it ran
on this 2-core machine at the same moment as the server's start and was counted as the
server's. `--cold-client` builds it after the port opens (the earlier method).
Two times are printed per run: when the server's answer to `tools/call` arrived, and when the
SDK client had finished with it (it also asks `tools/list` and validates the structured result).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# this directory is on sys.path when run as a script
from ports import wait_listening
from server_process import ServerProcess


async def one_run(data: Path, linger: bool = False, cold_client: bool = False) -> tuple[float, float, float]:
    """(initialize answered, the search's answer arrived, the SDK client returned it), from process start."""
    env = {
        "HF_HUB_OFFLINE": "1",
        "LOG_LEVEL": "WARNING",
        "XDG_CACHE_HOME": str(data.parent.absolute() / "user-cache"),
    }  # the first start really has no cache
    server = ServerProcess(data, env=env, stderr=subprocess.DEVNULL)
    answered: list[float] = []

    async def on_response(response: httpx2.Response) -> None:
        answered.append(time.perf_counter())

    def http_client() -> httpx2.AsyncClient:
        return httpx2.AsyncClient(event_hooks={"response": [on_response]})

    http = None if cold_client else http_client()
    started = time.perf_counter()
    server.launch()
    try:
        await wait_listening(server.port)
        async with http or http_client() as client_http:
            async with Client(streamable_http_client(server.mcp_url, http_client=client_http)) as client:
                initialized = time.perf_counter() - started
                calls = len(answered)
                result = await client.call_tool("search_memory", {"query": "what am I working on?"})
                assert not result.is_error, result.content
            first_search = time.perf_counter() - started
        search_answered = answered[calls] - started  # the response to the tools/call
        cache = data / "handshake-cache.json"
        deadline = time.monotonic() + 30
        while linger and not cache.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        server.stop(timeout=30)
    return initialized, search_answered, first_search


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path)
    parser.add_argument(
        "--cold-client", action="store_true", help="build the client's HTTP stack after the server starts"
    )
    args = parser.parse_args()
    data = args.data or Path(tempfile.mkdtemp(prefix="symbiote-cold-")) / "data"
    (data / "handshake-cache.json").unlink(missing_ok=True)
    init, answered, search = await one_run(data, linger=True, cold_client=args.cold_client)
    print(
        f"first start on this data directory (no handshake cache): initialize {init * 1000:.0f} ms, "
        f"search answered {answered * 1000:.0f} ms, returned by the client {search * 1000:.0f} ms"
    )
    inits, answers, searches = [], [], []
    for run in range(args.runs):
        init, answered, search = await one_run(data, cold_client=args.cold_client)
        inits.append(init)
        answers.append(answered)
        searches.append(search)
        print(
            f"run {run + 1}: initialize answered at {init * 1000:.0f} ms, first search_memory answered at "
            f"{answered * 1000:.0f} ms, returned by the client at {search * 1000:.0f} ms"
        )
    print(
        f"median over {args.runs} runs: initialize {statistics.median(inits) * 1000:.0f} ms, first search answered "
        f"{statistics.median(answers) * 1000:.0f} ms, returned by the client {statistics.median(searches) * 1000:.0f} ms "
        "(target <= 2000 ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
