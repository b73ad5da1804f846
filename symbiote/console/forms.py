"""Reading the console's forms and query strings as text: a posted form (after its CSRF check) and
a query string are both multi-dicts, read here through one typed helper instead of as `Any`."""

from __future__ import annotations

from starlette.datastructures import FormData, ImmutableMultiDict, UploadFile
from starlette.requests import Request

from symbiote.console.gate import visit_of
from symbiote.console.session import Sessions

# A posted form's fields (text or an uploaded file) or a query string's (text only).
Fields = ImmutableMultiDict[str, str | UploadFile]


def text(fields: Fields, name: str, default: str = "") -> str:
    """A field's value as text (`default` when it is absent), as the page sent it."""
    return str(fields.get(name, default))


def texts(fields: Fields, name: str) -> list[str]:
    """Every value of a repeated field (ticked boxes), as text, in the page's order."""
    return [str(value) for value in fields.getlist(name)]


async def checked_form(request: Request, max_field_bytes: int = 1024 * 1024) -> FormData | None:
    """The posted form, or None when its CSRF token is not this session's. `max_field_bytes`: the
    longest field taken, as sent (a pasted list's is the request body cap)."""
    form = await request.form(max_part_size=max_field_bytes)
    if not Sessions.csrf_ok(visit_of(request).session, text(form, "csrf")):
        return None
    return form
