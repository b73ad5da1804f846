"""The package's layers: every import inside `symbiote/` points down (lazy imports count), so the
engine never learns of MCP, HTTP or Azure and nothing below `fastboot/` depends on it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "symbiote"

# Higher imports lower; equal ranks must not import one another (siblings stay apart).
RANK = {
    "__main__": 10,
    "cli": 9,
    "http": 8,
    "console": 7,
    "runtime": 6,
    "mcp": 5,
    "auth": 5,
    "azure": 5,
    "fastboot": 5,
    "transfer": 5,
    "memory": 4,
    "retrieval": 3,
    "embedding": 2,
    "storage": 2,
    "workers": 1,
    "logs": 1,
    "config": 1,
    "telemetry": 0.8,
    "auth_settings": 0.5,
    "platform_hosts": 0.4,
    "errors": 0,
    "__init__": 0,
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("symbiote"):
            found += [node.module] if node.module != "symbiote" else [f"symbiote.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("symbiote")]
    return found


def test_every_module_belongs_to_a_known_layer() -> None:
    layers = {
        path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for path in PACKAGE.glob("*")
        if path.name != "__pycache__"
    }
    assert layers <= set(RANK), f"place {sorted(layers - set(RANK))} in RANK"


def test_imports_point_down() -> None:
    upward = []
    for path in PACKAGE.rglob("*.py"):
        source = _layer("symbiote." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        for target in _imports(path):
            layer = _layer(target)
            if layer == "__init__" or layer == source or layer not in RANK:  # e.g. `from symbiote import __version__`
                continue
            if RANK[layer] >= RANK[source]:
                upward.append(f"{path.relative_to(PACKAGE)} ({source}) imports {target} ({layer})")
    assert not upward, "\n".join(upward)
