"""The docs stay true to the code: every module is named in docs/architecture.md, and no doc
cites a module or benchmark script that no longer exists; every Python name docs/architecture.md
quotes is one the code has.

A new engineer reads docs/architecture.md to find where things live; a module it does not name
is one they cannot find, and a path that no longer exists sends them looking for nothing.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "symbiote"
DOCS = ROOT / "docs"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.stem not in ("__init__", "__main__"))


def _named(module: Path, text: str) -> bool:
    """Named as `stem` (in backticks, as the subpackage table does) or by its path, `memory/engine`."""
    path = str(module.relative_to(PACKAGE).with_suffix(""))
    return f"`{module.stem}`" in text or path in text


def test_architecture_names_every_module() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    unnamed = [str(p.relative_to(ROOT)) for p in _modules() if not _named(p, text)]
    assert not unnamed, f"docs/architecture.md does not name these modules (add each with its role): {unnamed}"


def _cited(pattern: str) -> set[tuple[str, str]]:
    found = set()
    for doc in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for match in re.finditer(pattern, doc.read_text(encoding="utf-8")):
            found.add((doc.name, match.group(0)))
    return found


def test_docs_cite_only_modules_and_scripts_that_exist() -> None:
    """`symbiote/x/y.py`, `symbiote.x.y`, `benchmarks/z.py` and `eval/z.py` in the docs all exist."""
    missing = []
    for doc, path in _cited(r"(?<![\w:/])(?:symbiote|benchmarks|eval)/[\w/]+\.py\b"):  # not `git show REV:path`
        if not (ROOT / path).is_file():
            missing.append((doc, path))
    names = _string_literals()
    for doc, dotted in _cited(r"`symbiote(?:\.[a-z_]+)+"):
        if dotted.lstrip("`") in names:
            continue  # a name the code gives something else: the gauge `symbiote.store.size`
        parts = dotted.lstrip("`").split(".")
        while len(parts) > 1 and not _module_or_package(parts):
            parts = parts[:-1]  # symbiote.memory.engine.MemoryEngine: an attribute after the module
        if len(parts) == 1:
            missing.append((doc, dotted))
    assert not missing, f"docs cite modules or scripts that do not exist: {sorted(missing)}"


def test_performance_lists_only_benchmarks_that_exist() -> None:
    """The "How to measure" table is what a contributor runs: every script in it exists (the timing
    scripts in `benchmarks/`, the relevance sets and the fit in `eval/`)."""
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    table = text.split("## How to measure", 1)[1].split("\n## ", 1)[0]
    scripts = set(re.findall(r"(?:benchmarks|eval)/\w+\.py", table))
    assert {s.split("/")[0] for s in scripts} == {"benchmarks", "eval"}, scripts
    assert all((ROOT / s).is_file() for s in scripts), scripts


def test_one_set_of_targets() -> None:
    """The targets live in the README's figure table; performance.md points there, not to numbers of its own."""
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    targets = text.split("The targets", 1)[1].split("\n\n", 1)[0]
    assert "README" in targets and not re.search(r"\d", targets), targets


def _string_literals() -> set[str]:
    return {
        m for p in PACKAGE.rglob("*.py") for m in re.findall(r'"(symbiote\.[\w.]+)"', p.read_text(encoding="utf-8"))
    }


def _module_or_package(parts: list[str]) -> bool:
    base = ROOT.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def test_no_development_machine_paths() -> None:
    """The README, docs and scripts are for any machine: no `../shared/...`, no "this machine"."""
    files = [
        ROOT / "README.md",
        *DOCS.glob("*.md"),
        *(ROOT / "scripts").iterdir(),
        *(ROOT / "benchmarks").rglob("*.py"),
        *(ROOT / "eval").rglob("*.py"),
    ]
    found = []
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for bad in ("../shared", "/work/", "this machine"):
            if bad in text:
                found.append((str(path.relative_to(ROOT)), bad))
    assert not found, f"development-machine paths or wording: {found}"


# -- every Python name docs/architecture.md quotes exists ----------------------------------------

# Quoted in architecture.md but no Python of ours: the MCP wire's fields and a JavaScript class.
NOT_PYTHON = {"_meta", "_meta.ui", "_meta.ui.csp", "_meta.ui.resourceUri", "App", "PersistentClient"}
# Files named as a program or the server writes them at run time, not as the repository holds them.
NOT_IN_REPOSITORY = {"memory.jsonl"}
FILE_SUFFIXES = {"py", "json", "jsonl", "txt", "sh", "html", "md", "toml", "npy", "lock", "sqlite3"}
# Where a quoted path starts: a subpackage of symbiote (`memory/engine`) or a folder of the repository.
PATH_ROOTS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} | {
    "symbiote",
    "tests",
    "eval",
    "benchmarks",
    "scripts",
    "personalities",
}


def _quoted_names(text: str) -> tuple[set[str], set[str], set[str]]:
    """The names a doc quotes: dotted (`engine.MemoryEngine`, `MemoryEngine.search`), paths
    (`memory/engine`, `storage/chroma/store.py`, `mcp/server.plain_schema`, in backticks or in the
    diagrams' code blocks) and bare ones a reader would look up (`StoreProcess`, `BESIDE_FROM`, `_sqlite`)."""
    quoted = set(re.findall(r"`([^`\n]+)`", text))
    blocks = "\n".join(re.findall(r"```\w*\n(.*?)```", text, flags=re.S))
    dotted = {q.removesuffix("()") for q in quoted if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(\(\))?", q)}
    path = r"(?<![\w/:.])[a-z_]+(?:/[\w-]+)+(?:\.[A-Za-z_]\w*)*/?"
    paths = {q for q in quoted if re.fullmatch(path, q)} | set(re.findall(path, blocks))
    paths = {p for p in paths if p.split("/")[0] in PATH_ROOTS}
    bare = {q for q in quoted if re.fullmatch(r"_?[A-Z][a-z]\w*|_[a-z]\w*|[A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]{3,}", q)}
    return dotted - NOT_PYTHON, paths, bare - NOT_PYTHON


def _definitions() -> dict[str, set[str]]:
    """Every name defined at a module's top level or in a class's body, and the modules defining it;
    modules by their last name too (`candidates` for `symbiote/storage/chroma/candidates.py`)."""
    found: dict[str, set[str]] = {}
    files = [*PACKAGE.rglob("*.py"), *ROOT.joinpath("tests").glob("*.py")]
    for path in files:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found.setdefault(module.rsplit(".", 1)[-1], set()).add(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef)]
        for body in bodies:
            for node in body:
                names: list[str] = []
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = [node.name]
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names = [node.target.id]
                for name in names:
                    found.setdefault(name, set()).add(module)
    return found


def _has(owner: object, name: str) -> bool:
    """An attribute, or an instance attribute a class declares (a field, or `self.name = ...` in its code)."""
    if hasattr(owner, name):
        return True
    if not inspect.isclass(owner):
        return False
    for cls in owner.__mro__:
        if name in getattr(cls, "__annotations__", {}):
            return True
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        if re.search(rf"self\.{name}\s*(:[^=\n]+)?=", source):
            return True
    return False


def _resolves(module: str, chain: list[str]) -> bool:
    """`module.a.b` exists; a one-name chain may also be a function defined inside another one,
    as each tool is inside its registrar (`mcp/tools.search_memory`)."""
    try:
        found: object = importlib.import_module(module)
    except ImportError:
        return False
    source = getattr(found, "__file__", None)
    if len(chain) == 1 and source and re.search(rf"^\s+(async )?def {chain[0]}\(", Path(source).read_text(), re.M):
        return True
    for name in chain:
        if not _has(found, name):
            return False
        found = getattr(found, name, None)
    return True


def _dotted_exists(dotted: str, defined: dict[str, set[str]]) -> bool:
    """`symbiote.x.y`, `x.y.Name` (under symbiote), `module.Name` by a module's last name, `Class.attr`
    by where the class is defined, or another package's name (`asyncio.gather`, `chromadb.HttpClient`)."""
    parts = dotted.split(".")
    if parts[-1] in FILE_SUFFIXES:  # a file's name: `ranking.py`, `relevance_model.json`
        return dotted in NOT_IN_REPOSITORY or dotted in _repository_file_names()
    starts: list[tuple[str, list[str]]] = []
    for i in range(len(parts), 0, -1):  # the longest module prefix first
        head, chain = ".".join(parts[:i]), parts[i:]
        starts += [(f"symbiote.{head}", chain), (head, chain)]
    starts += [(module, parts[1:]) for module in defined.get(parts[0], ())]  # `engine.MemoryEngine`
    starts += [(module, parts) for module in defined.get(parts[0], ())]  # `MemoryEngine.search`
    return any(_resolves(module, chain) for module, chain in starts if module.split(".")[0] != "__main__")


@functools.cache
def _repository_file_names() -> frozenset[str]:
    """Every file's name in the repository, without the installed environments and caches (a fresh
    clone's .venv holds some 100,000 files)."""
    names: set[str] = set()
    for _folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        names.update(files)
    return frozenset(names)


def _path_exists(path: str) -> bool:
    """`memory/engine` or `storage/chroma/store.py` (under symbiote/ or the repository), a folder
    (`tests/e2e/`), or a module and a name in it: `mcp/server.plain_schema`."""
    for base in (ROOT, PACKAGE):
        if (base / path).exists():
            return True
        folder, _, rest = path.rpartition("/")
        module, *chain = rest.split(".")
        target = base / folder / module
        if chain and chain[-1] in FILE_SUFFIXES:
            continue
        if target.with_suffix(".py").is_file() or (target / "__init__.py").is_file():
            dotted = ".".join(target.relative_to(ROOT).parts)
            if not chain or _resolves(dotted, chain):
                return True
    return False


def test_architecture_quotes_only_names_that_exist() -> None:
    """Each Python name docs/architecture.md quotes is something the code has today: a module, a
    class, a function, a constant or an attribute, imported and looked up, or a file."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    dotted, paths, bare = _quoted_names(text)
    defined = _definitions()
    assert len(dotted) > 30 and len(paths) > 50 and len(bare) > 30, (len(dotted), len(paths), len(bare))
    missing = sorted(d for d in dotted if not _dotted_exists(d, defined))
    missing += sorted(p for p in paths if not _path_exists(p))
    missing += sorted(b for b in bare if b not in defined and not _in_settings(b))
    assert not missing, f"docs/architecture.md quotes names the code does not have: {missing}"


def _in_settings(name: str) -> bool:
    """An environment variable the settings read (`SYMBIOTE_SHARE`, `CHROMA_HOST`)."""
    return f'"{name}"' in _package_text()


@functools.cache
def _package_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))


def test_performance_tells_the_present() -> None:
    """performance.md holds today's figures, each once with its date, commit and command, not a diary
    of dated sections: the history is in git, and the page says where."""
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    dated = re.findall(r"^#+ .*\b20\d\d-\d\d-\d\d\b.*$", text, flags=re.M)
    assert not dated, f"performance.md has dated sections (keep each figure's newest only): {dated}"
    assert "git log -p docs/performance.md" in text
