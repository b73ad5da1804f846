"""The one session every driver runs through its client (tests/clients/): list the tools, store a
memory, search for it, load the `venom_identity` prompt, send a bad argument. Run by the clients'
own Python (.venv-clients), so it imports nothing of Symbiote's and nothing outside the standard
library; a driver gives it three calls and it prints one JSON line the test asserts on."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

BAD_LIMIT = 99  # search_memory takes 1 to 20


@dataclass
class Client:
    """What a driver adapts of its client: tools as (name, input schema), a call's (is_error, text)
    and a prompt's text."""

    list_tools: Callable[[], Awaitable[list[tuple[str, dict[str, Any]]]]]
    call: Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]
    prompt: Callable[[str], Awaitable[str]]


def options() -> dict[str, Any]:
    """The driver's one argument: JSON with url, key (an API key or empty), transport, fact, question
    and the rest."""
    return dict(json.loads(sys.argv[1]))


async def session(adapted: Client, fact: str, question: str, **extra: Any) -> dict[str, Any]:
    """`fact` is stored and `question` must find it (the test gives each session a fact of its own)."""
    tools = await adapted.list_tools()
    result: dict[str, Any] = {"tools": [name for name, _schema in tools], **extra}
    failed, text = await adapted.call("store_memory", {"content": fact})
    result["stored"] = None if failed else json.loads(text).get("memory_id")
    result["store_error"] = text if failed else None
    failed, text = await adapted.call("search_memory", {"query": question})
    result["found"] = [] if failed else [hit["memory_id"] for hit in json.loads(text)["results"]]
    result["search_error"] = text if failed else None
    result["prompt"] = (await adapted.prompt("venom_identity"))[:200]
    failed, text = await adapted.call("search_memory", {"query": "anything", "limit": BAD_LIMIT})
    result["bad_argument"] = {"is_error": failed, "text": text}
    return result


def run(main: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> None:
    """Run the driver's `main(options)` and print what it returns as the last line of stdout."""
    print(json.dumps(asyncio.run(main(options()))))
