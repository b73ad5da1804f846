"""Every module with logic says where its tests are: a `tests/**/test_<module>.py`, or a row of
docs/tests.md naming the suites that cover it.

A maintainer who changes a module runs its tests; a module whose tests they cannot find is one they
change blind, and a row naming a module or a suite that no longer exists sends them looking for nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "symbiote"
TESTS = ROOT / "tests"
DOC = ROOT / "docs" / "tests.md"
ROW = re.compile(r"^\| `(symbiote/[\w/]+\.py)` \| (.+) \|$", re.MULTILINE)


def _has_logic(module: Path) -> bool:
    """A function or a class: a module of constants, imports and a docstring has nothing to test."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for node in ast.walk(tree))


def _name(module: Path) -> str:
    """What its test file is named after: the module (a private one without its underscore), or for a
    package's `__init__.py`, the package."""
    return module.parent.name if module.stem == "__init__" else module.stem.lstrip("_")


def _rows() -> dict[str, list[str]]:
    """docs/tests.md's table: module path -> the test paths its row names."""
    text = DOC.read_text(encoding="utf-8")
    return {module: re.findall(r"`(tests/[\w/.]+)`", suites) for module, suites in ROW.findall(text)}


def test_every_module_with_logic_has_a_test_file_or_a_row_in_the_tests_doc() -> None:
    named = {path.stem.removeprefix("test_") for path in TESTS.rglob("test_*.py")}
    listed = _rows()
    untested = [
        str(module.relative_to(ROOT))
        for module in sorted(PACKAGE.rglob("*.py"))
        if _has_logic(module) and _name(module) not in named and str(module.relative_to(ROOT)) not in listed
    ]
    assert not untested, (
        "these modules have no tests/**/test_<module>.py and no row in docs/tests.md "
        f"(write the test file, or add the row with the suites that cover it): {untested}"
    )


def test_the_tests_doc_names_only_modules_and_suites_that_exist() -> None:
    rows = _rows()
    assert len(rows) > 50, "docs/tests.md's table was not read: its rows are `| `symbiote/x.py` | `tests/...` |`"
    gone = [module for module in rows if not (ROOT / module).is_file()]
    assert not gone, f"docs/tests.md lists modules that no longer exist (remove or rename their rows): {gone}"
    missing = [(module, suite) for module, suites in rows.items() for suite in suites if not (ROOT / suite).exists()]
    assert not missing, f"docs/tests.md names suites that do not exist: {missing}"
    empty = [module for module, suites in rows.items() if not suites]
    assert not empty, f"docs/tests.md's rows name no suite for: {empty}"
