"""What the engine's entry points ask for, one typed request each, so that strict mypy checks every
caller's field names. A search's fields are written once: the search tool publishes them as its
input schema, the engine forwards them and the searcher reads them, so a new search option is added
in one place. The values arrive as the caller sent them (a client may send any JSON):
`symbiote.memory.validation` checks each where the engine uses it."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, get_type_hints

from pydantic import Field

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SearchRequest:
    """search_memory's arguments; each field's type and description is what the tool publishes."""

    query: Annotated[str, Field(description="What to look for, in natural language.")]
    limit: Annotated[int, Field(description="Maximum number of results, 1 to 20.")] = 5
    min_relevance: Annotated[
        float | None, Field(description="Leave out results scoring under this (0-100). Default 30.")
    ] = None
    after: Annotated[
        str | None, Field(description="Only memories stored on or after this date/time or phrase start.")
    ] = None
    before: Annotated[
        str | None, Field(description="Only memories stored before this date/time (or the start of a phrase).")
    ] = None
    when: Annotated[
        str | None, Field(description="Only memories stored within this period, e.g. 'last week', 'yesterday'.")
    ] = None
    tags: Annotated[list[str] | None, Field(description="Only memories with these tags (see tag_mode).")] = None
    tag_mode: Annotated[Literal["any", "all"], Field(description="'any' of the tags (default) or 'all' of them.")] = (
        "any"
    )
    type: Annotated[str | None, Field(description="Only memories of this type, e.g. preference.")] = None
    min_confidence: Annotated[
        float | None, Field(description="Only memories stored with at least this confidence (0-1).")
    ] = None


@dataclass(frozen=True)
class StoreRequest:
    """One memory to store (store_memory's arguments, and what stores it)."""

    content: str
    tags: list[str] | None = None
    type: str | None = None
    confidence: float | None = None
    conversation_id: str | None = None  # drawn from a conversation: the write policy applies
    bookmarked: bool = False
    client: str | None = None  # what stores it (an MCP client's name, "console"), for the owner's statistics
    replaces: list[str] | None = None  # ids of older memories it replaces, linked at once


@dataclass(frozen=True)
class UpdateRequest:
    """A change to one memory in place (update_memory's arguments): None keeps a field as it is."""

    memory_id: str
    content: str | None = None
    tags: list[str] | None = None
    type: str | None = None
    confidence: float | None = None
    bookmarked: bool | None = None


def takes(request: type[Any]) -> Callable[[F], F]:
    """Give `fn(**fields)` the signature of the dataclass `request` (its fields as keyword
    parameters, with their annotations and defaults): what a tool's input schema is made from."""
    hints = get_type_hints(request, include_extras=True)
    parameters = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=hints[field.name],
            default=inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default,
        )
        for field in dataclasses.fields(request)
    ]

    def give(fn: F) -> F:
        fn.__signature__ = inspect.signature(fn, eval_str=True).replace(parameters=parameters)  # type: ignore[attr-defined]
        return fn

    return give
