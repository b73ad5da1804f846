"""`symbiote keys` with a name that is not UTF-8 (a command line is bytes; Python reads such bytes as
lone surrogates): refused in words, exit 2, nothing written (issue 58: one text rule at every door)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from symbiote.cli.admin import keys


def test_a_key_name_that_is_not_text_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path / "data"))
    assert keys(argparse.Namespace(action="create", name="bad\udcffname")) == 2
    assert keys(argparse.Namespace(action="revoke", key="bad\udcff")) == 2
    assert "not valid Unicode text" in capsys.readouterr().err
    assert keys(argparse.Namespace(action="list")) == 0
    assert "No API keys" in capsys.readouterr().out
