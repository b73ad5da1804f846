"""What a search's reply costs an assistant, in tokens: the whole texts (before the reply budget) beside
the reply as sent, over the same searches of the same stores.

The stores: LoCoMo conversations (a turn a memory, every question), the owners of eval/owners_set.json
and eval/personal_set.json (personal-style memories and their questions), and eight meeting notes of
about 17,000 characters with one plan in one of them. The reply is the tool's JSON text, what a client
gives the model (structured content is the same object). Tokens are estimated from UTF-8 bytes: /4 (what
English runs near) and /3 (what no tokenizer undercuts by much).

    python benchmarks/reply_tokens.py --data ../locomo-dev --limit 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from benchmarks import locomo_data  # noqa: E402
from eval import relevance_sets  # noqa: E402
from symbiote.config import Settings  # noqa: E402
from symbiote.runtime import build_runtime  # noqa: E402
from tests.mcp.test_replies import long_note  # noqa: E402

NOTE_QUERIES = [
    "what did we plan for the tomatoes in the allotment?",
    "what did the team agree about the office move?",
    "hiring plan",
    "what happens next week?",
]


async def measure(memories: list[str], queries: list[str], limit: int) -> list[tuple[int, int]]:
    """(bytes of the whole texts' reply, bytes of the reply as sent) for each query, on a fresh store."""
    from mcp import Client

    with tempfile.TemporaryDirectory(prefix="symbiote-reply-") as tmp:
        settings = Settings.from_env({"CHROMADB_PATH": str(Path(tmp) / "data"), "SYMBIOTE_STORE_PROCESS": "off"})
        runtime = build_runtime(settings)
        try:
            async with Client(runtime.server) as client:
                for memory in memories:
                    await client.call_tool("store_memory", {"content": memory})
                sizes = []
                for query in queries:
                    got = await client.call_tool("search_memory", {"query": query, "limit": limit})
                    sent = got.content[0].text  # type: ignore[union-attr]
                    whole = await _whole(runtime, got.structured_content or {})
                    sizes.append((len(whole.encode()), len(sent.encode())))
                return sizes
        finally:
            runtime.close()


async def _whole(runtime: Any, data: dict[str, Any]) -> str:
    """The reply with every memory's whole text, as it was before the budget."""
    data = json.loads(json.dumps(data))
    for key in ("results", "below_cutoff"):
        for hit in data.get(key, []):
            if "content_chars" in hit:
                hit["content"] = (await runtime.engine.get(hit["memory_id"])).content
                del hit["content_chars"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def row(name: str, sizes: list[tuple[int, int]]) -> str:
    def cell(values: list[int]) -> str:
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return f"{statistics.median(values) / 4:,.0f} / {p95 / 4:,.0f} / {max(values) / 3:,.0f}"

    return f"| {name} | {len(sizes)} | {cell([w for w, _ in sizes])} | {cell([s for _, s in sizes])} |"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=locomo_data.DATA_DIR, help="the LoCoMo directory")
    parser.add_argument("--limit", type=int, default=5)
    args = parser.parse_args()
    print(f"limit {args.limit}; tokens: median and p95 at 4 bytes a token / largest at 3")
    print("| store | searches | whole texts (before) | as sent (after) |\n|---|---|---|---|")
    rng = random.Random(7)
    notes = [long_note(rng, index, with_plan=index == 3) for index in range(8)]
    print(row("8 notes of 17,000 characters", await measure(notes, NOTE_QUERIES, args.limit)), flush=True)
    owners = relevance_sets.owners()
    sizes: list[tuple[int, int]] = []
    for case in owners:
        sizes += await measure(list(case.memories.values()), [text for _kind, text, _w in case.queries], args.limit)
    print(row(f"{len(owners)} owners (eval/owners_set.json)", sizes), flush=True)
    case = relevance_sets.personal()
    print(
        row(
            "personal (eval/personal_set.json)",
            await measure(list(case.memories.values()), [q for _k, q, _w in case.queries], args.limit),
        )
    )
    for path in sorted(locomo_data.data_dir(args.data).glob("*.json")):
        conv = locomo_data.load_conversation(path)
        found = await measure([t.memory for t in conv.turns], [q.question for q in conv.questions], args.limit)
        print(row(f"LoCoMo {path.stem}", found), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
