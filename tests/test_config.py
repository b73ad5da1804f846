"""The settings read from the environment (`symbiote.config`): each value an operator may set is
read as written, and a bad one is refused at start with the variable, its value and the reason, all
of them at once (`ConfigError`), never served with a silent default."""

from __future__ import annotations

import re

import pytest

from symbiote.config import ConfigError, Settings

SHARE = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/a"


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        (
            {"SYMBIOTE_SSE_HEARTBEAT_SECONDS": "soon"},
            "SYMBIOTE_SSE_HEARTBEAT_SECONDS='soon' is not a number of seconds",
        ),
        ({"SYMBIOTE_SSE_HEARTBEAT_SECONDS": "0.01"}, "SYMBIOTE_SSE_HEARTBEAT_SECONDS=0.01 is out of range (0.1..300"),
        ({"SYMBIOTE_BODY_TIMEOUT_SECONDS": "7200"}, "SYMBIOTE_BODY_TIMEOUT_SECONDS=7200 is out of range (0.5..3600"),
        ({"CHROMA_HOST": "c", "CHROMA_KEYWORD_SYNC_SECONDS": "often"}, "CHROMA_KEYWORD_SYNC_SECONDS='often' is not a"),
        ({"CHROMA_HOST": "c", "CHROMA_KEYWORD_SYNC_SECONDS": "-1"}, "CHROMA_KEYWORD_SYNC_SECONDS=-1 is out of range"),
        ({"CHROMA_HOST": "chroma:port"}, "CHROMA_HOST='chroma:port' has an invalid port"),
        ({"CHROMA_HOST": "http://chroma:8000/api"}, "must be a host name, host:port or http(s)://host:port"),
        ({"MEMORY_CONFIDENCE_MIN": "high"}, "MEMORY_CONFIDENCE_MIN='high' is not a number"),
        ({"MEMORY_CONFIDENCE_MIN": "1.5"}, "MEMORY_CONFIDENCE_MIN=1.5 must be from 0 to 1"),
        (
            {"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SHARE_RESOURCE_ID": SHARE},
            f"SYMBIOTE_SHARE_RESOURCE_ID={SHARE!r} is not the resource id of a file share",
        ),
        (
            {"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SHARE_CONNECTION_STRING": "AccountName=a;AccountKey=k"},
            "SYMBIOTE_SHARE_CONNECTION_STRING needs SYMBIOTE_SHARE_NAME",
        ),
    ],
)
def test_a_bad_setting_is_refused_naming_the_variable_and_why(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        Settings.from_env(env)


def test_every_bad_setting_is_named_in_one_error() -> None:
    # an operator fixes them all in one go, not one start at a time
    with pytest.raises(ConfigError) as err:
        Settings.from_env({"SYMBIOTE_HEADER_TIMEOUT_SECONDS": "x", "MEMORY_CONFIDENCE_MIN": "2", "PORT": "0"})
    assert [line.split("=")[0] for line in str(err.value).splitlines()[1:]] == [
        "  - PORT",
        "  - MEMORY_CONFIDENCE_MIN",
        "  - SYMBIOTE_HEADER_TIMEOUT_SECONDS",
    ]


def test_timings_and_thresholds_are_read_as_written() -> None:
    settings = Settings.from_env(
        {
            "SYMBIOTE_SSE_HEARTBEAT_SECONDS": "2.5",
            "SYMBIOTE_BODY_TIMEOUT_SECONDS": "60",
            "MEMORY_CONFIDENCE_MIN": "0.35",
            "CHROMA_HOST": "chroma",
            "CHROMA_KEYWORD_SYNC_SECONDS": "0",
        }
    )
    assert (settings.sse_heartbeat_seconds, settings.body_timeout_seconds) == (2.5, 60.0)
    assert settings.memory_confidence_min == 0.35 and settings.chroma_keyword_sync_seconds == 0.0
    defaults = Settings.from_env({})
    assert (defaults.sse_heartbeat_seconds, defaults.memory_confidence_min) == (
        Settings.sse_heartbeat_seconds,
        Settings.memory_confidence_min,
    )
