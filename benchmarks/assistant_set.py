"""Our own assistant set, through the real server: recall on natural questions, junk on never-stored ones.

40 memories a real assistant would store (preferences, projects, decisions, people, facts), 61
natural questions about them (40 direct, 21 vague: "what am I working on?"), and 40 questions
about things never stored. Prints recall@1/5 on the questions (default cut-off), the junk rate
(never-stored questions that return anything), and the seed case "what am I building?".

    .venv/bin/python benchmarks/assistant_set.py [--min-relevance N] [--verbose]

The data lives in benchmarks/assistant_data.py.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assistant_data  # noqa: E402
from mcp_client import passages_indexed, structured  # noqa: E402
from server_process import TempServer  # noqa: E402

SEED_MEMORY = "I'm working on a React app with TypeScript and authentication"


async def run(min_relevance: float | None, verbose: bool) -> None:
    from mcp import Client

    with TempServer() as server:
        async with Client(server.mcp_url) as client:
            ids = []
            for memory in assistant_data.MEMORIES:
                ids.append(structured(await client.call_tool("store_memory", {"content": memory}))["memory_id"])
            index = {memory_id: i for i, memory_id in enumerate(ids)}
            await passages_indexed(client)  # the passages follow the stores

            async def ask(query: str) -> list[dict[str, Any]]:
                args: dict[str, Any] = {"query": query, "limit": 5}
                if min_relevance is not None:
                    args["min_relevance"] = min_relevance
                return structured(await client.call_tool("search_memory", args))["results"]

            hits1 = hits5 = 0
            for question, wanted in assistant_data.QUESTIONS:
                results = await ask(question)
                got = [index.get(r["memory_id"], -1) for r in results]
                hits1 += bool(got[:1] and got[0] in wanted)
                hits5 += bool(set(got) & wanted)
                if verbose:
                    mark = "ok " if set(got) & wanted else "MISS"
                    print(f"  {mark} {question!r}: {[(g, r['relevance_score']) for g, r in zip(got, results)]}")
            junk = []
            for question in assistant_data.NEGATIVES:
                results = await ask(question)
                if results:
                    junk.append((question, results[0]["content"], results[0]["relevance_score"]))
            seed = await ask(assistant_data.SEED)
    n = len(assistant_data.QUESTIONS)
    print(f"questions: {n}; recall@1 {hits1 / n:.2f}, recall@5 {hits5 / n:.2f}")
    print(
        f"never-stored questions: {len(assistant_data.NEGATIVES)}; junk rate {len(junk) / len(assistant_data.NEGATIVES):.2f}"
    )
    for question, content, score in junk:
        print(f"  junk: {question!r} -> {content!r} ({score})")
    rank = next((i + 1 for i, r in enumerate(seed) if r["content"] == SEED_MEMORY), None)
    print(f"seed 'what am I building?': React memory at rank {rank} of {len(seed)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-relevance", type=float)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(args.min_relevance, args.verbose))


if __name__ == "__main__":
    main()
