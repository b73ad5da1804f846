"""The owner's console at `/console`: see, search, correct, export and import the memories.

`symbiote.console.app.create_console` builds it; `static/htmx.min.js` is htmx 2.0.11 from its npm
package (`htmx.org`), vendored unchanged with its licence (`static/htmx.LICENSE`).
"""
