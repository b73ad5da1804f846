"""One rule in one place: each settings default, the content cap, the instant parser, the filter
builder and the search's arguments are defined once, and every surface reads that definition."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from symbiote import config
from symbiote.config import Settings
from symbiote.errors import InvalidInputError
from symbiote.memory import SearchRequest, clock, takes, validation, write_policy
from symbiote.storage import MemoryFilter
from symbiote.transfer import export_format


def test_reading_an_empty_environment_gives_the_written_defaults() -> None:
    assert Settings.from_env({}) == Settings()


def test_the_content_cap_is_one_constant() -> None:
    assert Settings().max_content_bytes == config.MAX_CONTENT_BYTES
    assert write_policy.EnginePolicy().max_content_bytes == config.MAX_CONTENT_BYTES
    assert validation.MAX_CONTENT_BYTES is config.MAX_CONTENT_BYTES
    assert inspect.signature(validation.content).parameters["max_bytes"].default == config.MAX_CONTENT_BYTES


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-31T09:30:00.000001Z",
        "1969-12-31T23:59:59.999999Z",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999+00:00",
        "2026-11-21",
        "2026-11-21T10:00:00+02:00",
    ],
)
def test_one_instant_parser_exact_to_the_microsecond(text: str) -> None:
    micros = clock.instant_us(text)
    assert export_format.parse_instant(text, "created") == micros
    assert clock.instant_us(clock.iso_utc(micros)) == micros


def test_an_import_line_names_the_bad_time() -> None:
    with pytest.raises(export_format.LineError, match="created='yesterday' is not an ISO-8601 time"):
        export_format.parse_instant("yesterday", "created")


def test_one_filter_builder_for_the_search_and_the_console() -> None:
    from symbiote.console.memories import Filters

    console = Filters(tag="work, home", type="Preference", start="2026-01-01", end="2026-01-31").where()
    after, before = clock.instant_us("2026-01-01T00:00:00Z"), clock.instant_us("2026-02-01T00:00:00Z")
    assert console == validation.memory_filter(["work", "home"], "any", "preference", None, after, before)
    assert validation.memory_filter() == MemoryFilter()
    with pytest.raises(InvalidInputError):
        validation.memory_filter(tag_mode="some")


def test_the_search_arguments_are_the_requests_fields() -> None:
    @takes(SearchRequest)
    async def tool(**request: object) -> None:
        return None

    names = [field.name for field in dataclasses.fields(SearchRequest)]
    assert list(inspect.signature(tool).parameters) == names
    assert len(names) == 10
    assert SearchRequest("q", 7).limit == 7 and SearchRequest("q").tag_mode == "any"
