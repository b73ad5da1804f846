"""The one text rule (`symbiote.storage.text`): what is Unicode text, what a name may hold, and where
in a decoded JSON body the first string that is not text sits."""

from __future__ import annotations

import json

import pytest

from symbiote.errors import InvalidInputError
from symbiote.storage import text


def test_a_lone_surrogate_is_not_text_and_the_error_names_the_field_and_the_character() -> None:
    assert text.not_text_at("plain") is None
    assert text.not_text_at("a\U0001f600b") is None  # a paired surrogate escape decodes to one character
    assert text.not_text_at("ab\ud800") == 2 and text.not_text_at("\udfff") == 0
    with pytest.raises(InvalidInputError, match=r"tag 1 is not valid Unicode text: character 2 .*U\+D800"):
        text.text("t\ud800", "tag 1")


@pytest.mark.parametrize("bad", ["a\x00b", "a\x1fb", "a\x7fb", "a\x85b", "\u202eevil", "a\u2066b", "a\u200fb"])
def test_a_name_holds_no_control_or_bidirectional_formatting_character(bad: str) -> None:
    with pytest.raises(InvalidInputError, match="control or formatting character"):
        text.name(bad, "tag 1")
    assert text.name("Café ☕ عربي", "tag 1") == "Café ☕ عربي"


def test_what_a_client_says_of_itself_is_kept_printable_never_refused() -> None:
    assert text.printable("curl\ud800\u202e") == "curl\ufffd\ufffd"
    assert text.repaired("t\ud800\x00") == "t\ufffd\x00"


def test_the_first_string_that_is_not_text_is_found_by_its_path_keys_included() -> None:
    body = json.loads('{"params": {"arguments": {"content": "ok", "tags": ["fine", "t\\ud800"]}}}')
    assert text.first_not_text(body) == "params.arguments.tags[1]"
    assert text.first_not_text(json.loads('{"params": {"\\udc80": 1}}')) == "params.\\udc80"
    assert text.first_not_text(json.loads('{"params": {"emoji": "\\ud83d\\ude00"}}')) is None
    assert text.first_not_text("\ud800") == "the body"


def test_a_write_cut_off_by_a_chroma_server_never_says_nothing_was_changed() -> None:
    """Issue 58: Chroma killed mid-batch, and `store_memories` said "nothing was changed" of 10 stored memories."""
    import httpx

    from symbiote.storage import RemoteStoreError, write_failure

    for cut in (
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ReadError("[Errno 104] Connection reset by peer"),
        RemoteStoreError("ConnectError: [Errno 111] Connection refused", errno=111),
    ):
        message = str(write_failure(cut))
        assert "nothing was changed" not in message and "whether it was saved is unknown" in message, message
    assert "nothing was changed" in str(write_failure(RuntimeError("sqlite said no")))
