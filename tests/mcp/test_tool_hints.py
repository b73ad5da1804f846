"""Tool hints are written once: every tool names its hints through `symbiote.mcp.tools.hints`, so
the closed world and the spelling of each hint are one rule, not a block copied into every tool."""

from __future__ import annotations

import ast
from pathlib import Path

from symbiote.mcp.tools import hints

MCP = Path(__file__).resolve().parents[2] / "symbiote" / "mcp"


def test_only_the_helper_builds_tool_annotations() -> None:
    built = [
        f"{path.name}:{node.lineno}"
        for path in sorted(MCP.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ToolAnnotations"
    ]
    assert len(built) == 1 and built[0].startswith("tools.py:"), built


def test_a_tool_hint_names_only_what_holds_and_the_world_is_closed() -> None:
    read = hints("Search memory", read_only=True, idempotent=True)
    assert (read.title, read.read_only_hint, read.destructive_hint, read.idempotent_hint, read.open_world_hint) == (
        "Search memory",
        True,
        False,
        True,
        False,
    )
    assert hints("Store memory").model_dump() == hints("Store memory", read_only=False, destructive=False).model_dump()
