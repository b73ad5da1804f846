"""Server-rendered pages: Jinja2 templates with autoescaping on for every template and value.

Memory content is whatever an assistant stored, so it is treated as hostile text: it only ever
reaches a page through an escaped `{{ }}` (no template marks anything safe), and the pages'
Content-Security-Policy allows no inline script as a second line of defence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from symbiote.console.gate import context_of
from symbiote.console.state import console_state
from symbiote.memory import iso_utc

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


def _when(value: Any) -> str:
    """A time for people: '2026-11-23 17:15 UTC' from microseconds or an ISO string."""
    if value is None or value == "":
        return ""
    text = iso_utc(value) if isinstance(value, int) else str(value)
    return text[:16].replace("T", " ") + " UTC"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    return env


_ENV = _environment()


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    values = {**context_of(request), "mode": console_state(request).mode, "path": request.url.path, **context}
    return HTMLResponse(_ENV.get_template(template).render(values), status_code=status)


def fragment(template: str, **context: Any) -> HTMLResponse:
    """A piece of a page (what htmx swaps in), from a template of its own."""
    return HTMLResponse(_ENV.get_template(template).render(context))


def problem(request: Request, message: str, status: int = 400) -> HTMLResponse:
    """An error page saying what went wrong, in the console's frame."""
    return page(request, "problem.html", status=status, message=message)
