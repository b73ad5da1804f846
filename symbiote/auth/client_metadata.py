"""Client ID Metadata Documents: a `client_id` that is an HTTPS URL names the client's own metadata.

Since the 2025-11-25 MCP authorization revision a client may identify itself by the URL of a
JSON document it publishes (draft-ietf-oauth-client-id-metadata-document) instead of
registering. The server fetches that document when it first sees the client, and the document's
`redirect_uris` are the only places a code may be sent; the name shown on the consent page comes
from it, next to the URL's host, which is what vouches for it.

Fetching a URL a stranger chose is a server-side request forgery risk, so a fetch is bounded
on every side: HTTPS only, no redirects followed, every address the name resolves to must be a
public one (no private, link-local, loopback or reserved network, nor one that carries an IPv4
address such as NAT64 or ::127.0.0.1; loopback only with the test setting SYMBIOTE_CIMD_ALLOW_LOOPBACK), the connection goes to the address that was checked (so a
second DNS answer cannot swap it), at most MAX_DOCUMENT_BYTES within FETCH_SECONDS, and new
fetches share the client registration budget. Documents are cached (their Cache-Control
max-age, within bounds) and failures for a minute, so a flood of requests naming the same URL
costs one fetch.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import re
import socket
import ssl
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from symbiote.auth.registration import metadata_problem
from symbiote.errors import SymbioteError

log = logging.getLogger("symbiote.auth")

MAX_DOCUMENT_BYTES = 10 * 1024
FETCH_SECONDS = 5.0
DEFAULT_TTL, MIN_TTL, MAX_TTL = 3600.0, 60.0, 86400.0
FAILURE_TTL = 60.0
MAX_CACHED = 256
_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)")


class ClientMetadataError(SymbioteError):
    """The document could not be fetched, or does not describe a client this server accepts."""


def is_metadata_url(client_id: str) -> bool:
    """An https URL with a path: the form a Client ID Metadata Document's `client_id` takes."""
    if not client_id.startswith("https://") or len(client_id) > 2000:
        return False
    try:
        parts = urlsplit(client_id)
    except ValueError:  # e.g. an unbalanced "[": no URL at all
        return False
    segments = parts.path.split("/")
    return bool(
        parts.hostname
        and parts.path not in ("", "/")
        and not parts.fragment
        and not parts.username
        and not parts.password
        and "." not in segments
        and ".." not in segments
    )


# Networks refused whatever this Python's `is_global` says of them: those that carry or translate
# an IPv4 address (IPv4-compatible ::/96, NAT64, 6to4, Teredo), IETF and reserved blocks.
REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "240.0.0.0/4",
        "::/96",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "2002::/16",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
    )
)


def address_allowed(address: str, allow_loopback: bool) -> bool:
    """Only public unicast addresses; loopback too when the test setting allows it."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return allow_loopback
    if any(ip.version == network.version and ip in network for network in REFUSED_NETWORKS):
        return False
    return ip.is_global and not ip.is_multicast


def check_document(url: str, document: Any) -> dict[str, Any]:
    """The document as a dict, or ClientMetadataError saying what is wrong with it."""
    problem = metadata_problem(document)
    if problem is not None:
        raise ClientMetadataError(problem)
    if document.get("client_id") != url:
        raise ClientMetadataError("its client_id is not the URL it was fetched from")
    if not document.get("redirect_uris"):
        raise ClientMetadataError("it lists no redirect_uris")
    if any(key in document for key in ("client_secret", "client_secret_expires_at")):
        raise ClientMetadataError("it contains a client secret, which a public document must not")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise ClientMetadataError(f"token_endpoint_auth_method {method!r} is not supported (only 'none')")
    if "authorization_code" not in document.get("grant_types", ["authorization_code"]):
        raise ClientMetadataError("its grant_types do not include authorization_code")
    checked: dict[str, Any] = document  # metadata_problem found it a JSON object
    return checked


def _ttl(cache_control: str) -> float:
    if "no-store" in cache_control or "no-cache" in cache_control:
        return MIN_TTL
    found = _MAX_AGE.search(cache_control)
    return min(MAX_TTL, max(MIN_TTL, float(found.group(1)))) if found else DEFAULT_TTL


class ClientMetadataDocuments:
    """Fetches, checks and caches documents; one instance serves every origin of the server."""

    def __init__(
        self,
        *,
        allow_loopback: bool = False,
        admit: Callable[[], float] = lambda: 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`admit()` counts a fetch against the registration budget: 0, or the seconds to wait."""
        self.allow_loopback = allow_loopback
        self._admit = admit
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, dict[str, Any] | str]] = OrderedDict()
        self._fetching: dict[str, asyncio.Future[dict[str, Any] | str]] = {}
        cafile = os.environ.get("SSL_CERT_FILE") or None
        self._tls = ssl.create_default_context(cafile=cafile) if cafile else httpx.create_ssl_context()

    async def document(self, url: str) -> dict[str, Any]:
        """The checked document for `url` (cached), or ClientMetadataError."""
        cached = self._cache.get(url)
        if cached is not None and cached[0] > self._clock():
            self._cache.move_to_end(url)
            found = cached[1]
        elif url in self._fetching:
            found = await asyncio.shield(self._fetching[url])
        else:
            wait = self._admit()
            if wait > 0:
                raise ClientMetadataError(f"too many new clients; try again in {wait:.0f} seconds")
            future: asyncio.Future[dict[str, Any] | str] = asyncio.get_running_loop().create_future()
            self._fetching[url] = future
            found = "the fetch of its client metadata document was interrupted"
            try:
                found = await self._fetch_and_remember(url)
            finally:
                del self._fetching[url]
                future.set_result(found)  # those waiting on the same URL get this fetch's answer
        if isinstance(found, str):
            raise ClientMetadataError(found)
        return found

    async def _fetch_and_remember(self, url: str) -> dict[str, Any] | str:
        try:
            document, ttl = await self._fetch(url)
            found: dict[str, Any] | str = check_document(url, document)
        except ClientMetadataError as exc:
            found, ttl = f"the client metadata document at {url} was refused: {exc}", FAILURE_TTL
            log.warning("%s", found)
        self._cache[url] = (self._clock() + ttl, found)
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)
        return found

    async def _fetch(self, url: str) -> tuple[Any, float]:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 443
        try:
            with anyio.fail_after(FETCH_SECONDS):
                address = await self._checked_address(host, port)
                return await self._get(url, host, address, port)
        except TimeoutError:
            raise ClientMetadataError(f"no answer within {FETCH_SECONDS:g} seconds") from None
        except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
            raise ClientMetadataError(f"it could not be fetched ({type(exc).__name__}: {exc})") from None

    async def _checked_address(self, host: str, port: int) -> str:
        try:
            answers = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ClientMetadataError(f"its host name does not resolve ({exc})") from None
        addresses = [str(answer[4][0]) for answer in answers]
        refused = [address for address in addresses if not address_allowed(address, self.allow_loopback)]
        if not addresses or refused:
            raise ClientMetadataError(f"its host resolves to an address that is not public ({', '.join(refused)})")
        return addresses[0]

    async def _get(self, url: str, host: str, address: str, port: int) -> tuple[Any, float]:
        """GET from the checked address, the name kept for TLS (SNI and certificate) and Host."""
        parts = urlsplit(url)
        pinned = f"https://{f'[{address}]' if ':' in address else address}:{port}{parts.path}"
        if parts.query:
            pinned += f"?{parts.query}"
        async with httpx.AsyncClient(verify=self._tls, trust_env=False, follow_redirects=False) as http:
            request = http.build_request(
                "GET",
                pinned,
                headers={"Host": parts.netloc, "Accept": "application/json"},
                extensions={"sni_hostname": host},
            )
            response = await http.send(request, stream=True)
            try:
                if response.status_code != 200:
                    raise ClientMetadataError(f"it answered HTTP {response.status_code} (redirects are not followed)")
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if kind != "application/json" and not kind.endswith("+json"):
                    raise ClientMetadataError(f"it is {kind or 'untyped'}, not application/json")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise ClientMetadataError(f"it is larger than {MAX_DOCUMENT_BYTES} bytes")
                ttl = _ttl(response.headers.get("cache-control", "").lower())
            finally:
                await response.aclose()
        try:
            return json.loads(body), ttl
        except (ValueError, UnicodeDecodeError):
            raise ClientMetadataError("it is not valid JSON") from None
