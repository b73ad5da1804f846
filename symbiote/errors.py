"""The errors the memory engine raises; each message is written for the person reading it."""

from __future__ import annotations


class SymbioteError(Exception):
    """Base class of every error the package defines, so a caller can catch "a Symbiote error" once.
    Except for a `DriverError`, the message is written for a person and safe to show a user."""


class DriverError(SymbioteError):
    """A failure below the engine carried up as it was raised (e.g. by Chroma in the store process):
    not yet in words for a person, so the store I/O classifies, logs and words it like any other."""


def worded(exc: BaseException) -> bool:
    """Whether `exc` is already an error a person can act on, to pass through untouched; anything
    else (a driver's failure) is logged with its trace and reported in words by the caller."""
    return isinstance(exc, SymbioteError) and not isinstance(exc, DriverError)


class InvalidInputError(SymbioteError):
    """An argument is missing, empty, too long or out of range."""


class MemoryNotFoundError(SymbioteError):
    """No memory has the given id."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(
            f"Memory not found: {memory_id!r}. It may have been deleted or the id is mistyped; "
            "use search_memory or list_memories to find the right id."
        )
        self.memory_id = memory_id


class ChangedMeanwhileError(SymbioteError):
    """A memory changed between the read and the write of a change to it (another server on the
    same Chroma store): nothing was written; read it again."""


class StoreUnavailableError(SymbioteError):
    """The memory store cannot be opened or written; the message says what to fix."""


class DataFormatError(StoreUnavailableError):
    """The data directory was written in a format this release does not know (a newer release's):
    it is refused, and left exactly as it is, rather than read wrongly or rewritten."""
