"""The owner's commands in this process: `symbiote keys` with a name that is not UTF-8 (a command line
is bytes; Python reads such bytes as lone surrogates) refused in words, exit 2, nothing written
(issue 58: one text rule at every door); keys made, listed and revoked; a sign-in database that
cannot be opened said in words; the owner secret's hash; `reset` asking first."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from symbiote.auth import OwnerSecret
from symbiote.cli.admin import console, keys, oauth, owner_secret_hash, reset


def test_a_key_name_that_is_not_text_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path / "data"))
    assert keys(argparse.Namespace(action="create", name="bad\udcffname")) == 2
    assert keys(argparse.Namespace(action="revoke", key="bad\udcff")) == 2
    assert "not valid Unicode text" in capsys.readouterr().err
    assert keys(argparse.Namespace(action="list")) == 0
    assert "No API keys" in capsys.readouterr().out


def test_keys_create_list_and_revoke_on_a_loopback_server_say_what_they_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path / "data"))
    for name in ("   ", "n" * 101):
        assert keys(argparse.Namespace(action="create", name=name)) == 2
        assert "give the key a name of 1 to 100 characters" in capsys.readouterr().err
    assert keys(argparse.Namespace(action="create", name="  vs   code ")) == 0
    created = capsys.readouterr().out
    assert "(vs code). Copy it now" in created and "runs without authentication" in created  # checked only with oauth
    assert keys(argparse.Namespace(action="list")) == 0
    (row,) = capsys.readouterr().out.splitlines()[1:]
    assert "vs code" in row and row.split()[-1] == "active" and " - " in row  # never used
    assert keys(argparse.Namespace(action="revoke", key="vs code")) == 0
    assert "stops working immediately" in capsys.readouterr().out
    assert keys(argparse.Namespace(action="revoke", key="vs code")) == 1
    assert "no active API key with id or name 'vs code'" in capsys.readouterr().err


def test_a_sign_in_database_that_cannot_be_opened_is_said_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path / "data"))
    monkeypatch.setenv("SYMBIOTE_AUTH_DB", str(tmp_path))  # a directory
    for command in (
        lambda: keys(argparse.Namespace(action="list")),
        lambda: oauth(argparse.Namespace()),
        lambda: console(argparse.Namespace()),
    ):
        assert command() == 1
        assert "cannot be opened" in capsys.readouterr().err


def test_owner_secret_hash_refuses_a_short_secret_and_hashes_a_long_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert owner_secret_hash(argparse.Namespace()) == 2
    assert "the owner secret needs at least" in capsys.readouterr().err
    secret = "a long enough owner secret for this test, 2026"
    monkeypatch.setattr("sys.stdin", io.StringIO(secret + "\n"))
    assert owner_secret_hash(argparse.Namespace()) == 0
    hashed = capsys.readouterr().out.strip()
    assert secret not in hashed and OwnerSecret(secret_hash=hashed).verify(secret)
    assert not OwnerSecret(secret_hash=hashed).verify(secret + "!")


def test_reset_asks_for_confirm_and_on_a_new_path_makes_an_empty_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHROMADB_PATH", str(tmp_path / "data"))
    assert reset(argparse.Namespace(confirm=False, sign_ins=False)) == 2
    assert "Run again with --confirm" in capsys.readouterr().err and not (tmp_path / "data").exists()
    assert reset(argparse.Namespace(confirm=True, sign_ins=False)) == 0
    assert capsys.readouterr().out.strip() == f"created an empty memory store at {tmp_path / 'data'}"
