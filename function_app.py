"""Azure Functions entry point: the Symbiote MCP server behind the Functions host.

The Python v2 programming model indexes this module and finds two functions:

- `http_app_func`: every HTTP request (`/{*route}`; host.json sets `routePrefix: ""`) goes to the
  same ASGI app as `symbiote serve`: streamable HTTP at `/mcp` (stateless, JSON responses, since
  the Functions adapter buffers whole responses; `GET /mcp` answers 405), legacy SSE, and health
  at `/` and `/health`.
- `snapshot_share`: a timer (SYMBIOTE_SNAPSHOT_SCHEDULE, daily at 03:00 UTC by default) that
  snapshots the file share with writes quiesced and prunes to SYMBIOTE_SNAPSHOT_KEEP.

Authentication: the Functions auth level is ANONYMOUS because Claude and ChatGPT connectors
cannot send an `x-functions-key` header. Authentication happens inside the ASGI app instead:
OAuth with the owner secret, or API keys (`symbiote.auth`, docs/auth.md).
"""

from __future__ import annotations

import atexit
import logging

import azure.functions as func

from symbiote.azure import FileShare
from symbiote.config import Settings
from symbiote.http.app import create_app
from symbiote.runtime import ModelLoader

log = logging.getLogger("symbiote.function_app")

HTTP_AUTH_LEVEL = func.AuthLevel.ANONYMOUS


def build_function_app(
    settings: Settings, *, share: FileShare | None = None, warm_up: bool = True, load_model: ModelLoader | None = None
) -> func.AsgiFunctionApp:
    """The function app for `settings`. `share` stands in for the file share SYMBIOTE_SHARE would open,
    `load_model` for the model the runtime would load (tests share one)."""
    # No logs.configure(): the Functions worker owns the root logger and forwards it to the host
    # (console and Application Insights); replacing its handlers would silence us there.
    logging.getLogger("symbiote").setLevel(settings.log_level)
    asgi = create_app(settings, warm_up=warm_up, share=share, load_model=load_model)
    services = asgi.state.runtime.share
    app = func.AsgiFunctionApp(app=asgi, http_auth_level=HTTP_AUTH_LEVEL)
    app.symbiote_asgi = asgi  # type: ignore[attr-defined]  # for tests and diagnostics

    @app.function_name(name="snapshot_share")
    @app.timer_trigger(schedule=settings.snapshot_schedule, arg_name="timer", run_on_startup=False, use_monitor=True)
    def snapshot_share(timer: func.TimerRequest) -> None:
        """Snapshot the file share (writes paused meanwhile) and prune old snapshots."""
        if services is None:
            log.info("snapshot skipped: no file share configured (SYMBIOTE_SHARE is unset)")
            return
        if timer.past_due:
            log.info("snapshot timer is past due; taking the snapshot now")
        result = services.snapshots.run(reason="scheduled")
        log.info("snapshot result: %s", result)

    if services is not None:
        atexit.register(services.close)  # the next instance then need not wait for the lease to go stale
    return app


app = build_function_app(Settings.from_env())
