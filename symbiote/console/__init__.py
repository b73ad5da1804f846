"""The owner's console at `/console`: see, search, correct, export and import the memories.

`symbiote.console.console_app.create_console` builds it; `static/htmx.min.js` is htmx 2.0.11 from its npm
package (`htmx.org`), vendored unchanged with its licence (`static/htmx.LICENSE`).

This is the package's door: other packages import from `symbiote.console`, never from a module
inside it (tests/test_layers.py checks). Only the session key is imported here (`symbiote console
sign-out-all` needs nothing else); `console_app` (the ASGI app, `console_access`) and `state` (what the pages
need of the server) are let out whole and bring Starlette, Jinja2 and the engine where the HTTP app
is built.
"""

from symbiote.console.session import SessionKey, key_path

__all__ = ["SessionKey", "console_app", "key_path", "state"]
