"""What the console's pages need of the running server, in one typed object: the app factory builds
it once and every page reads it through `console_state`, so a page's use of the engine, the history
or the import jobs is checked by mypy instead of read from untyped `app.state` attributes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import HTTPConnection

from symbiote.console.gate import Access
from symbiote.console.jobs import ImportJobs

if TYPE_CHECKING:
    from symbiote.memory import ConversationHistory, MemoryBulk, MemoryEngine
    from symbiote.transfer import TurnReader


@dataclass(frozen=True)
class ConsoleState:
    """The console's share of the server: its access rules, the engine, the history (None when the
    server keeps none) and its reader, the import jobs and the server's request body cap."""

    access: Access
    engine: MemoryEngine
    history: ConversationHistory | None
    turns: TurnReader | None
    jobs: ImportJobs
    max_body: int
    trash_per_instance: bool = False  # memories on a Chroma server, the trash in this instance's directory

    @property
    def mode(self) -> str:
        """The auth mode: "none" (loopback only) or "oauth"."""
        return self.access.mode

    @property
    def bulk(self) -> MemoryBulk:
        """The owner's bulk operations (list, fetch, export, import) over the engine's store."""
        return self.engine.bulk


def console_state(where: HTTPConnection | Starlette) -> ConsoleState:
    """The state of the console app serving `where` (a request to it, or the app itself)."""
    app = where.app if isinstance(where, HTTPConnection) else where
    state = app.state.console
    if not isinstance(state, ConsoleState):
        raise TypeError("not the console's app: its state is set by symbiote.console.console_app.create_console")
    return state
