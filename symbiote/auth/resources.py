"""The protected resources (RFC 8707, RFC 9728) one origin of this server answers for.

A client names as `resource` the URL it connected to, and holds the server's metadata to it: a
client of `/mcp` expects `<origin>/mcp`, a client of the legacy SSE pair `<origin>/sse`, and one
that found the metadata at the root (RFC 9728 §3.1 with an empty path) the origin itself. Each is
described at its own well-known URL and named in the 401 of its routes (`/messages/...` belongs to
`/sse`; memory links to the origin). They are one server with one owner and one scope, so a token
issued for any of them is good on all of them; a token for another origin (or any other server)
is good on none.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

STREAMABLE = "/mcp"  # streamable HTTP
LEGACY_SSE = "/sse"  # the legacy SSE pair: GET /sse and POST /messages/...
ORIGIN = ""  # the server as a whole: memory links, and clients that read the root metadata
PATHS = (STREAMABLE, LEGACY_SSE, ORIGIN)


def canonical(url: str) -> str:
    """Lowercase scheme and host, no trailing slash: how two spellings of one resource compare."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class Resources:
    """This server's resources on `origin` (`scheme://host[:port]`, no path)."""

    origin: str

    @classmethod
    def of(cls, url: str) -> Resources:
        """The resources of the origin `url` is on."""
        parts = urlsplit(canonical(url))
        return cls(f"{parts.scheme}://{parts.netloc}")

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    @property
    def default(self) -> str:
        """What a token is for when its client named no resource."""
        return self.url(STREAMABLE)

    def named(self, resource: str | None) -> str | None:
        """`resource` as one of ours (canonical), or None if it names another server."""
        if resource is None:
            return None
        wanted = canonical(resource)
        return wanted if wanted in {canonical(self.url(path)) for path in PATHS} else None

    def metadata_url(self, path: str) -> str:
        """RFC 9728 §3.1: the well-known segment between the origin and the resource's path."""
        return f"{self.origin}/.well-known/oauth-protected-resource{path}"
