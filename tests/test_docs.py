"""The docs stay true to the code: every module is named in docs/architecture.md, and no doc
cites a module or benchmark script that no longer exists.

A new engineer reads docs/architecture.md to find where things live; a module it does not name
is one they cannot find, and a path that no longer exists sends them looking for nothing.
"""

from __future__ import annotations

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


def _current_text(doc: Path) -> str:
    """What a doc says of today's code: performance.md's dated sections name things as they were
    at their commits (it says so), so of that page only the part before them counts."""
    text = doc.read_text(encoding="utf-8")
    if doc.name == "performance.md":
        text = text.split("\n## Where the time go")[0]
    return text


def _cited(pattern: str) -> set[tuple[str, str]]:
    found = set()
    for doc in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for match in re.finditer(pattern, _current_text(doc)):
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
