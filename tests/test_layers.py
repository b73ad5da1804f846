"""The package's layers: every import inside `symbiote/` points down (lazy imports count), so the
engine never learns of MCP, HTTP or Azure and nothing below `fastboot/` depends on it; and every
package has a door (`__all__` in its `__init__`) and is entered only through it.

The surface rule: a module of package P (e.g. `symbiote.storage.filters`) may be imported by name
only from inside P (its own modules and its subpackages'); everywhere else in `symbiote/` and in
`function_app.py` imports P itself, and only names in P's `__all__`. `__all__` may let a whole module
out (as `symbiote.memory` does its argument checks, `validation`, or `symbiote.http` its `app`, which
must not be imported before the server listens): that module may then be imported from anywhere. A
subpackage's `__init__` is a door of its own (`symbiote.storage.chroma`). Tests, benchmarks and eval/
use the doors for what they let out; they reach into a module only for what no door lets out (the
internals they test or measure), and `tests/<package>/` may use `symbiote.<package>`'s modules freely.

The layer order is written once, in RANK; docs/architecture.md quotes it (checked below)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "symbiote"

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


def _file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    return (
        base / "__init__.py"
        if (base / "__init__.py").is_file()
        else base.with_suffix(".py")
        if base.with_suffix(".py").is_file()
        else None
    )


def _imported_by(module: str) -> set[str]:
    """Every `symbiote` module that importing `module` may run, at import or later (lazy imports
    count): what it imports, the packages on their way, and theirs in turn."""
    found: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = _file(name)
        if name in found or path is None:
            continue
        found.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages' __init__ run first
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and node.module.startswith("symbiote")
            ):
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]  # a name may be a module
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("symbiote")]
    return found


def test_the_store_process_runs_only_storage_and_what_lies_below() -> None:
    """The store process (`storage/chroma/process/child`) imports nothing above storage: a search
    sends its fusion down as data (`storage.Fusion`), never retrieval's code to run there."""
    above = sorted(
        m
        for m in _imported_by("symbiote.storage.chroma.process.child")
        if _layer(m) in RANK and RANK[_layer(m)] >= RANK["storage"] and _layer(m) != "storage"
    )
    assert not above, f"the store process would import: {above}"


def _doors() -> dict[str, set[str]]:
    """Each package with a door: its dotted name and the names its `__all__` lets out."""
    found = {}
    for init in PACKAGE.rglob("__init__.py"):
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                name = ".".join(("symbiote", *init.parent.relative_to(PACKAGE).parts))
                found[name] = set(ast.literal_eval(node.value))
    return found


def _module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name a file's imports are judged as (`root`: the checkout it is in). A test in
    `tests/<package>/` is judged as `symbiote.<package>` itself, inside it and its subpackages: it
    may test their modules."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[0] == "tests" and len(parts) > 2 and (PACKAGE / parts[1]).is_dir():
        return f"symbiote.{parts[1]}.*"
    return ".".join(parts)


def _inside(importer: str, package: str) -> bool:
    if importer.endswith(".*"):  # a test of a package: inside it and its subpackages
        return package == importer[:-2] or package.startswith(importer[:-1])
    return importer.startswith(package + ".")


def _reaches(node: ast.AST, doors: dict[str, set[str]]) -> list[tuple[str, str, bool]]:
    """What an import takes past a door: (the module reached, its door, whether the door lets out all
    the import takes). `from symbiote.memory import validation` and `from symbiote.http.app import
    create_app` go through the door, whose `__all__` lets `validation` and `app` out whole."""
    found = []
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in doors:
        for alias in node.names:
            if alias.name not in doors[node.module] and f"{node.module}.{alias.name}" not in doors:
                found.append((f"{node.module}.{alias.name}", node.module, False))
        return found
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        modules, names = [node.module], [a.name for a in node.names]
    elif isinstance(node, ast.Import):
        modules, names = [a.name for a in node.names], []
    else:
        return found
    for module in modules:
        door = max((d for d in doors if module.startswith(d + ".")), key=len, default=None)
        if door is not None and module.removeprefix(door + ".").split(".")[0] not in doors[door]:
            found.append((module, door, bool(names) and set(names) <= doors[door]))
    return found


def _past_the_doors(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Every import that reaches past a door, as `file: what it imports` (`root`: the checkout the
    files are in; the doors are always this one's)."""
    doors = _doors()
    past = []
    for path in paths:
        importer = _module_name(path, root)
        code = importer.startswith("symbiote.") and not importer.endswith(".*") or importer == "function_app"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for module, door, lets_out in _reaches(node, doors):
                if _inside(importer, door):
                    continue
                if code or lets_out:  # a test or benchmark reaches in only for what no door lets out
                    past.append(f"{path.relative_to(root)}: {module}")
    return past


def _sources() -> list[Path]:
    found = [*PACKAGE.rglob("*.py"), ROOT / "function_app.py", *(ROOT / "benchmarks").rglob("*.py")]
    found += [*(ROOT / "eval").rglob("*.py")]
    found += [p for p in (ROOT / "tests").rglob("*.py") if "node_modules" not in p.parts]
    # A fixture's maker runs against an old release's code, whose packages had no doors.
    return sorted(p for p in found if not p.name.startswith("make_release_"))


def test_every_package_has_a_door() -> None:
    """Each package's `__init__` names in `__all__` what other packages may use: without one, the
    check below would let every import into it pass."""
    packages = {".".join(("symbiote", *i.parent.relative_to(PACKAGE).parts)) for i in PACKAGE.rglob("__init__.py")}
    missing = sorted(packages - set(_doors()) - {"symbiote"})
    assert not missing, f"give these packages a door (`__all__` in their __init__): {missing}"


def test_other_packages_enter_a_package_only_through_its_door() -> None:
    past = _past_the_doors(_sources())
    assert not past, "import these from the package's __init__ (or add the name to its __all__):\n" + "\n".join(past)


def test_the_door_check_sees_an_import_past_a_door(tmp_path: Path) -> None:
    """The check above would pass on nothing: it fails on the import the issue names (in a module of
    a temporary copy of the package's layout: no test writes into the source tree)."""
    probe = tmp_path / "symbiote" / "memory" / "_door_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from symbiote.storage.chroma.store import ChromaMemoryStore\n", encoding="utf-8")
    found = _past_the_doors([probe], root=tmp_path)
    assert found == ["symbiote/memory/_door_probe.py: symbiote.storage.chroma.store"]


# The engine is the one door to the store: what reaches the store (its interfaces, their reaches,
# the engine's store calls, the store process, the store's openers) is named only by the memory
# package, which calls through it, the storage package, which is it, the file share's guard, a reach
# itself, and the composition root, which builds the reach. Every other caller holds the engine and its parts.
REACHING_THE_STORE = frozenset(
    {
        "MemoryStore",
        "HistoryStore",
        "Reach",
        "Local",
        "Remote",
        "ResetGuard",
        "LeaseGuard",
        "StoreIO",
        "LazyReach",
        "StoreProcess",
        "ChromaMemoryStore",
        "ServerMemoryStore",
        "open_embedded_store",
        "open_server_store",
        "open_history_store",
        "_io",  # the engine's `StoreIO`
    }
)
MAY_REACH_THE_STORE = ("symbiote.memory", "symbiote.storage", "symbiote.runtime", "symbiote.azure.guard")


def _reaching_the_store(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Each name in REACHING_THE_STORE, and each import of `memory.store_io` or `memory.lazy_reach`,
    in a module of `symbiote/` (or `function_app.py`) outside MAY_REACH_THE_STORE, as `file: name`."""
    found = []
    for path in paths:
        module = _module_name(path, root).removesuffix(".__init__")
        if module.endswith(".*") or not module.startswith("symbiote.") and module != "function_app":
            continue  # tests, benchmarks and eval/ reach below the engine for what they test or measure
        if module == "symbiote.azure" or any(module == m or module.startswith(m + ".") for m in MAY_REACH_THE_STORE):
            continue  # (`symbiote.azure` is the door that lets the guard out)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add(node.name.rsplit(".", 1)[-1])
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.rsplit(".", 1)[-1])
        reached = names & (REACHING_THE_STORE | {"store_io", "lazy_reach"})
        found += [f"{path.relative_to(root)}: {name}" for name in sorted(reached)]
    return found


def test_nothing_but_the_engine_reaches_the_store() -> None:
    """Callers (the tools, the console, transfer, health, telemetry) use the engine and its parts
    (`trash`, `bulk`, `links`), and the conversation history's service; none holds a reach or calls a store."""
    found = _reaching_the_store(_sources())
    assert not found, "go through the engine (symbiote.memory.MemoryEngine):\n" + "\n".join(found)


def test_the_store_check_sees_a_caller_past_the_engine(tmp_path: Path) -> None:
    """The check above would pass on nothing: it fails on a console module that reads the store
    below the engine (in a temporary copy of the package's layout)."""
    probe = tmp_path / "symbiote" / "console" / "_store_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from symbiote.storage import MemoryStore\n\n\nasync def count(engine):\n"
        "    return await engine._io.read(MemoryStore.count)\n",
        encoding="utf-8",
    )
    found = _reaching_the_store([probe], root=tmp_path)
    assert found == ["symbiote/console/_store_probe.py: MemoryStore", "symbiote/console/_store_probe.py: _io"]


def test_the_architecture_doc_quotes_the_layer_order() -> None:
    """docs/architecture.md shows RANK as it is, so the order is written once and quoted."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    quoted = text.split("<!-- RANK -->\n```\n", 1)[1].split("```", 1)[0]
    assert quoted == rank_table(), "copy rank_table() into docs/architecture.md"


def rank_table() -> str:
    """RANK as the doc quotes it: one line per rank, highest first."""
    ranks = sorted(set(RANK.values()), reverse=True)
    return "".join(f"{r:>4}  {'  '.join(sorted(n for n, v in RANK.items() if v == r))}\n" for r in ranks)
