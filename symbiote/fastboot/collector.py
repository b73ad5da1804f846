"""Start-up without the cyclic garbage collector.

Importing the MCP SDK builds hundreds of pydantic models, and every few hundred of the
objects that allocates triggers a collection that walks all of them again: about 7 % of the
start-up. Nothing made during start-up is garbage, so collecting it is wasted work. Once the
app is built, `gc.freeze()` moves those long-lived objects out of the collector's sight for
the rest of the process, so later collections (and their pauses) stay small too.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic GC for the block, then freeze what it built and resume collecting."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
