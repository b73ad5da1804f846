"""`symbiote import --text` in this process (`symbiote.cli.transfer_commands`): a pasted list stored
and tagged, with the undo said; a list that is not UTF-8 or holds nothing refused in words with exit
1. The commands end to end, as processes: tests/transfer/test_transfer.py."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from symbiote.cli.transfer_commands import import_memories
from tests.conftest import MODEL_DIR


def _import(**given: object) -> int:
    args = {"file": None, "text": None, "tag": None, "dry_run": False, "replace": False, **given}
    return import_memories(argparse.Namespace(**args))


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path / "data"))
    monkeypatch.setenv("SYMBIOTE_MODEL_DIR", str(MODEL_DIR))
    monkeypatch.setenv("SYMBIOTE_STORE_PROCESS", "off")
    return tmp_path


def test_a_pasted_list_not_utf_8_or_empty_is_refused_in_words(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latin = data / "latin.txt"
    latin.write_bytes(b"- caf\xe9 on the corner\n")
    assert _import(text=str(latin)) == 1
    assert capsys.readouterr().err.strip() == f"symbiote: {latin} is not UTF-8 text"
    empty = data / "empty.txt"
    empty.write_text("\n  \n")
    assert _import(text=str(empty)) == 1
    assert capsys.readouterr().err.strip() == "symbiote: Nothing was pasted, so nothing was imported."


def test_a_pasted_list_is_stored_tagged_and_its_undo_said(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paste = data / "paste.txt"
    paste.write_text("- The ladder is in the garage\n- The paint is in the cellar\n")
    assert _import(text=str(paste), tag="chores") == 0
    out = capsys.readouterr().out
    assert "2 added" in out and "Tagged chores: to undo, delete the memories with that tag" in out
