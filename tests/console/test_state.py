"""The console's state is one typed object behind one accessor: no page reads an untyped `app.state`
attribute or silences the type checker, and the accessor refuses an app that is not the console."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.applications import Starlette

from symbiote.console.state import console_state

CONSOLE = Path(__file__).resolve().parents[2] / "symbiote" / "console"


def sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(CONSOLE.glob("*.py"))}


def test_no_type_ignore_in_the_console() -> None:
    assert [name for name, text in sources().items() if "type: ignore" in text] == []


def test_only_the_accessor_and_the_factory_touch_app_state() -> None:
    touching = {name for name, text in sources().items() if re.search(r"\bapp\.state\.", text)}
    assert touching == {"console_app.py", "state.py"}


def test_the_accessor_refuses_an_app_that_is_not_the_console() -> None:
    other = Starlette()
    other.state.console = "something else"
    with pytest.raises(TypeError, match="not the console's app"):
        console_state(other)
