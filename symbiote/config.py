"""Every setting Symbiote reads, in one place, from environment variables.

Settings are parsed once at start and validated all together, so a bad deployment fails with
one message listing every problem instead of a crash later on the first request.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from symbiote.auth_settings import (
    ACCESS_TOKEN_TTL_SECONDS,
    CHATGPT_TOOLS_DEFAULT,
    REFRESH_TOKEN_TTL_SECONDS,
    REGISTRATIONS_PER_HOUR,
    REGISTRATIONS_PER_MINUTE,
    read_auth_settings,
)
from symbiote.errors import SymbioteError
from symbiote.telemetry import DEFAULT_LOG_FORMAT, OFF_WORDS, ON_WORDS, read_telemetry_settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent
INSTALLED_SHARE = Path(sys.prefix) / "share" / "symbiote"  # where an installed wheel puts its data files


def _resource_dir(name: str, *, user_data: bool = False) -> Path:
    """A checkout keeps `personalities/` and `models/` beside the package; an installed wheel has
    its personalities under `<prefix>/share/symbiote` and exports the model to the user's data
    directory (the wheel carries no model). Either way the path is where `scripts/setup.sh` or
    `symbiote export-model` writes, so a "missing" error names a real place to look."""
    checkout = PROJECT_ROOT / name
    if checkout.exists() or (PROJECT_ROOT / "pyproject.toml").is_file():
        return checkout
    if user_data:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
        return base / "symbiote" / name
    return INSTALLED_SHARE / name


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TRANSPORTS = ("http", "sse", "stdio")
SHARE_KINDS = ("local", "azure")  # SYMBIOTE_SHARE; unset or "off" means no file share features
# One memory's text, in bytes of UTF-8: the default of SYMBIOTE_MAX_CONTENT_BYTES, far more than any
# real note. The one definition: the settings, the engine's policy and validation all read it.
MAX_CONTENT_BYTES = 100_000


class ConfigError(SymbioteError):
    """Configuration that cannot work; the message says what to change."""


def _split(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


@dataclass(frozen=True)
class Settings:
    """Validated configuration. Build with `Settings.from_env()`."""

    host: str = "127.0.0.1"
    port: int = 8000
    chromadb_path: Path = Path("./data")
    personality: str = "default"
    log_level: str = "INFO"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    model_dir: Path = _resource_dir("models", user_data=True) / "all-MiniLM-L6-v2"
    personalities_dir: Path = _resource_dir("personalities")
    embed_cache_size: int = 2048
    # Deployment (Azure): the platform's own host names, and the file share that holds the data.
    platform_hosts: tuple[str, ...] = ()
    share: str = ""
    share_path: Path | None = None
    share_name: str = ""
    share_account_url: str = ""
    share_resource_id: str = ""
    share_connection_string: str = field(default="", repr=False)
    managed_identity_client_id: str = ""
    lease_ttl_seconds: int = 60
    snapshot_schedule: str = "0 0 3 * * *"
    snapshot_keep: int = 7
    # Authentication (symbiote.auth): who may connect. auth_mode "" means automatic: none on a
    # loopback bind, oauth anywhere else (including behind the Functions host on a public name).
    auth_mode: str = ""
    allow_unauthenticated: bool = False
    owner_secret: str = field(default="", repr=False)
    owner_secret_hash: str = field(default="", repr=False)
    public_url: str = ""
    trust_forwarded_headers: bool | None = None  # None: trusted when behind a platform's proxy
    behind_functions_host: bool = False
    access_token_ttl_seconds: int = ACCESS_TOKEN_TTL_SECONDS
    refresh_token_ttl_seconds: int = REFRESH_TOKEN_TTL_SECONDS
    auth_db_path: Path | None = None
    chatgpt_tools: str = CHATGPT_TOOLS_DEFAULT  # on | off | auto (on wherever ChatGPT can reach the server)
    open_registration: bool = True  # RFC 7591 /register; off: metadata documents and registered clients only
    registrations_per_minute: int = REGISTRATIONS_PER_MINUTE  # per address
    registrations_per_hour: int = REGISTRATIONS_PER_HOUR  # in total
    client_metadata_documents: bool = True  # a client_id that is an HTTPS URL names its metadata
    metadata_loopback: bool = False  # SYMBIOTE_CIMD_ALLOW_LOOPBACK: tests only

    # Conversation history and build_context (symbiote.memory.history, symbiote.memory.context).
    # Memory limits and policy (issue 4): None = unlimited / kept forever.
    max_memories: int | None = None
    retention_days: int | None = None
    memory_confidence_min: float = 0.7
    memory_max_per_window: int = 3
    min_free_mb: int = 50  # writes are refused while less is free on the data disk (0: never)
    max_content_bytes: int = MAX_CONTENT_BYTES  # one memory's text, UTF-8 (SYMBIOTE_MAX_CONTENT_BYTES)
    store_process: bool = True  # embedded Chroma in its own process (symbiote.storage.chroma.process); off: in-process
    history_tail_n: int = 16
    memory_top_k: int = 8
    context_token_budget: int = 2000
    # A Chroma server instead of the embedded store (symbiote.storage.chroma.client). chroma_host "" = embedded.
    chroma_host: str = ""
    chroma_port: int = 8000
    chroma_ssl: bool = False
    chroma_auth_token: str = field(default="", repr=False)
    chroma_auth_header: str = "Authorization"
    chroma_tenant: str = "default_tenant"
    chroma_database: str = "default_database"
    # How stale this instance's keyword index may be, at most, with other instances' writes (docs/chroma-server.md).
    chroma_keyword_sync_seconds: float = 5.0
    # Transports and the HTTP surface (symbiote.http.app, symbiote.http.sse, symbiote.http.limits; docs/transports.md).
    transport: str = "http"  # http (streamable /mcp + legacy SSE) | sse (legacy SSE only) | stdio
    sse_heartbeat_seconds: float = 30.0
    sse_max_lifetime_seconds: float = 3600.0
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = 4 * 1024 * 1024
    header_timeout_seconds: float = 5.0  # a request head must be complete this soon (symbiote.http.connections)
    max_connections: int = 1000  # open at once, within the open-file limit
    max_header_bytes: int = 64 * 1024  # a request head, in bytes (431 past it)
    max_header_line_bytes: int = 16 * 1024  # its request line or one header line
    body_timeout_seconds: float = 10.0  # the longest silence within a request body
    # Telemetry (symbiote.telemetry; docs/observability.md). The exporters read the standard OTEL_* variables.
    log_format: str = DEFAULT_LOG_FORMAT  # LOG_FORMAT: text | json (unset: json on Azure)
    trace_content: bool = False  # SYMBIOTE_TRACE_CONTENT: tool arguments and results in span attributes

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and validate the environment; raise ConfigError naming every bad variable."""
        env = os.environ if environ is None else environ
        problems: list[str] = []

        def integer(name: str, default: int, low: int, high: int) -> int:
            raw = env.get(name, "").strip()
            try:
                value = int(raw or default)
            except ValueError:
                problems.append(f"{name}={raw!r} is not a whole number")
                return default
            if not low <= value <= high:
                problems.append(f"{name}={value} is out of range ({low}..{high})")
            return value

        port = integer("PORT", cls.port, 1, 65535)
        cache = integer("SYMBIOTE_EMBED_CACHE_SIZE", cls.embed_cache_size, 0, 1_000_000)
        log_level = env.get("LOG_LEVEL", "").strip().upper() or cls.log_level
        if log_level not in LOG_LEVELS:
            problems.append(f"LOG_LEVEL={log_level!r} must be one of {', '.join(LOG_LEVELS)}")
            log_level = cls.log_level
        host = env.get("HOST", "").strip() or cls.host
        chroma = env.get("CHROMADB_PATH", "").strip()
        model_dir = env.get("SYMBIOTE_MODEL_DIR", "").strip()
        personalities = env.get("SYMBIOTE_PERSONALITIES_DIR", "").strip()
        share = _share_settings(env, problems, integer)
        chroma_server = _chroma_server_settings(env, problems, integer)
        memory_context = _context_settings(integer)
        limits = _limit_settings(env, problems, integer)
        auth = read_auth_settings(env, problems, integer, host)
        transport = _transport_settings(env, problems, integer)
        telemetry = read_telemetry_settings(env, problems)
        if problems:
            raise ConfigError("Invalid configuration:\n  - " + "\n  - ".join(problems))
        return cls(
            host=host,
            port=port,
            chromadb_path=Path(chroma).expanduser() if chroma else cls.chromadb_path,
            personality=env.get("VENOM_PERSONALITY", "").strip() or cls.personality,
            log_level=log_level,
            allowed_hosts=_split(env.get("SYMBIOTE_ALLOWED_HOSTS", "")),
            allowed_origins=_split(env.get("SYMBIOTE_ALLOWED_ORIGINS", "")),
            model_dir=Path(model_dir).expanduser() if model_dir else cls.model_dir,
            personalities_dir=Path(personalities).expanduser() if personalities else cls.personalities_dir,
            embed_cache_size=cache,
            **share,
            **chroma_server,
            **memory_context,
            **limits,
            **auth,
            **transport,
            **telemetry,
        )


def _transport_settings(env: Mapping[str, str], problems: list[str], integer: Any) -> dict[str, Any]:
    """SYMBIOTE_TRANSPORT, the legacy SSE timings, CORS, and the HTTP limits (body, head, timeouts, connections)."""

    def seconds(name: str, default: float, low: float, high: float) -> float:
        raw = env.get(name, "").strip()
        try:
            value = float(raw or default)
        except ValueError:
            problems.append(f"{name}={raw!r} is not a number of seconds")
            return default
        if low <= value <= high:
            return value
        problems.append(f"{name}={raw} is out of range ({low:g}..{high:g} seconds)")
        return default

    transport = env.get("SYMBIOTE_TRANSPORT", "").strip().lower() or Settings.transport
    if transport not in TRANSPORTS:
        problems.append(f"SYMBIOTE_TRANSPORT={transport!r} must be one of {', '.join(TRANSPORTS)}")
        transport = Settings.transport
    cors = _split(env.get("SYMBIOTE_CORS_ORIGINS", ""))
    for origin in cors:
        if origin == "*":
            problems.append(
                "SYMBIOTE_CORS_ORIGINS='*' is not accepted: any web page could then drive the memory from a "
                "visitor's browser. List the origins of the browser-based clients, e.g. https://app.example.com"
            )
        elif not origin.startswith(("http://", "https://")) or origin.rstrip("/").count("/") != 2:
            problems.append(f"SYMBIOTE_CORS_ORIGINS entry {origin!r} must be an origin like https://app.example.com")
    return {
        "transport": transport,
        "sse_heartbeat_seconds": seconds("SYMBIOTE_SSE_HEARTBEAT_SECONDS", Settings.sse_heartbeat_seconds, 0.1, 300.0),
        "sse_max_lifetime_seconds": seconds(
            "SYMBIOTE_SSE_MAX_LIFETIME_SECONDS", Settings.sse_max_lifetime_seconds, 1.0, 7 * 86400.0
        ),
        "cors_origins": tuple(o.rstrip("/") for o in cors if o != "*"),
        "max_body_bytes": integer("SYMBIOTE_MAX_BODY_BYTES", Settings.max_body_bytes, 1024, 256 * 1024 * 1024),
        "header_timeout_seconds": seconds("SYMBIOTE_HEADER_TIMEOUT_SECONDS", Settings.header_timeout_seconds, 0.5, 300),
        "max_connections": integer("SYMBIOTE_MAX_CONNECTIONS", Settings.max_connections, 16, 1_000_000),
        "max_header_bytes": integer("SYMBIOTE_MAX_HEADER_BYTES", Settings.max_header_bytes, 4096, 2**24),
        "max_header_line_bytes": integer("SYMBIOTE_MAX_HEADER_LINE_BYTES", Settings.max_header_line_bytes, 1024, 2**24),
        "body_timeout_seconds": seconds("SYMBIOTE_BODY_TIMEOUT_SECONDS", Settings.body_timeout_seconds, 0.5, 3600),
    }


def _share_settings(env: Mapping[str, str], problems: list[str], integer: Any) -> dict[str, Any]:
    """The deployment settings: platform host names, the file share, the writer lease, snapshots."""
    from symbiote.platform_hosts import platform_hosts

    kind = env.get("SYMBIOTE_SHARE", "").strip().lower()
    kind = "" if kind in ("", "off", "none") else kind
    path = env.get("SYMBIOTE_SHARE_PATH", "").strip()
    name = env.get("SYMBIOTE_SHARE_NAME", "").strip()
    account_url = env.get("SYMBIOTE_SHARE_ACCOUNT_URL", "").strip().rstrip("/")
    resource_id = env.get("SYMBIOTE_SHARE_RESOURCE_ID", "").strip().rstrip("/")
    connection = env.get("SYMBIOTE_SHARE_CONNECTION_STRING", "").strip()
    if kind and kind not in SHARE_KINDS:
        problems.append(f"SYMBIOTE_SHARE={kind!r} must be one of {', '.join(SHARE_KINDS)} (or unset)")
    if kind == "local" and not path:
        problems.append("SYMBIOTE_SHARE=local needs SYMBIOTE_SHARE_PATH (the directory holding CHROMADB_PATH)")
    if kind == "azure":
        if not connection and not resource_id:
            problems.append(
                "SYMBIOTE_SHARE=azure needs SYMBIOTE_SHARE_RESOURCE_ID (managed identity) "
                "or SYMBIOTE_SHARE_CONNECTION_STRING"
            )
        if resource_id and "/fileServices/default/shares/" not in resource_id:
            problems.append(f"SYMBIOTE_SHARE_RESOURCE_ID={resource_id!r} is not the resource id of a file share")
        if connection and not resource_id and not name:
            problems.append("SYMBIOTE_SHARE_CONNECTION_STRING needs SYMBIOTE_SHARE_NAME")
    schedule = env.get("SYMBIOTE_SNAPSHOT_SCHEDULE", "").strip() or Settings.snapshot_schedule
    if len(schedule.split()) != 6:
        problems.append(
            f"SYMBIOTE_SNAPSHOT_SCHEDULE={schedule!r} must be an NCRONTAB expression with six fields "
            "(second minute hour day month weekday), e.g. '0 0 3 * * *'"
        )
    return {
        "platform_hosts": platform_hosts(env),
        "share": kind,
        "share_path": Path(path).expanduser() if path else None,
        "share_name": name,
        "share_account_url": account_url,
        "share_resource_id": resource_id,
        "share_connection_string": connection,
        "managed_identity_client_id": env.get("AZURE_CLIENT_ID", "").strip(),
        "lease_ttl_seconds": integer("SYMBIOTE_LEASE_TTL_SECONDS", Settings.lease_ttl_seconds, 15, 3600),
        "snapshot_schedule": schedule,
        "snapshot_keep": integer("SYMBIOTE_SNAPSHOT_KEEP", Settings.snapshot_keep, 1, 200),
    }


CHROMA_AUTH_HEADERS = ("Authorization", "X-Chroma-Token")


def _context_settings(integer: Any) -> dict[str, Any]:
    """Conversation history and build_context defaults (docs/history.md)."""
    return {
        "history_tail_n": integer("HISTORY_TAIL_N", Settings.history_tail_n, 1, 200),
        "memory_top_k": integer("MEMORY_TOP_K", Settings.memory_top_k, 1, 20),
        "context_token_budget": integer("CONTEXT_TOKEN_BUDGET", Settings.context_token_budget, 100, 8_000),
    }


def _chroma_server_settings(env: Mapping[str, str], problems: list[str], integer: Any) -> dict[str, Any]:
    """A Chroma server (docs/chroma-server.md): CHROMA_HOST (a name, host:port or URL) and its options."""
    from urllib.parse import urlsplit

    raw_host = env.get("CHROMA_HOST", "").strip()
    raw_port = env.get("CHROMA_PORT", "").strip()
    raw_ssl = env.get("CHROMA_SSL", "").strip().lower()
    token = env.get("CHROMA_AUTH_TOKEN", "").strip()
    header = env.get("CHROMA_AUTH_HEADER", "").strip()
    tenant = env.get("CHROMA_TENANT", "").strip() or Settings.chroma_tenant
    database = env.get("CHROMA_DATABASE", "").strip() or Settings.chroma_database
    raw_sync = env.get("CHROMA_KEYWORD_SYNC_SECONDS", "").strip()
    sync = Settings.chroma_keyword_sync_seconds
    try:
        sync = float(raw_sync or sync)
    except ValueError:
        problems.append(f"CHROMA_KEYWORD_SYNC_SECONDS={raw_sync!r} is not a number of seconds")
    if not 0 <= sync <= 3600:
        problems.append(f"CHROMA_KEYWORD_SYNC_SECONDS={raw_sync} is out of range (0..3600 seconds)")
        sync = Settings.chroma_keyword_sync_seconds
    ssl: bool | None = None
    if raw_ssl in ("1", "true", "yes", "on"):
        ssl = True
    elif raw_ssl in ("0", "false", "no", "off"):
        ssl = False
    elif raw_ssl:
        problems.append(f"CHROMA_SSL={raw_ssl!r} must be 1/true/yes or 0/false/no")
    port = integer("CHROMA_PORT", Settings.chroma_port, 1, 65535)
    host = raw_host
    if raw_host:
        parts = urlsplit(raw_host if "://" in raw_host else f"//{raw_host}")
        if "://" in raw_host and parts.scheme not in ("http", "https"):
            problems.append(f"CHROMA_HOST={raw_host!r}: the scheme must be http or https")
        try:
            url_port = parts.port
        except ValueError:
            url_port = None
            problems.append(f"CHROMA_HOST={raw_host!r} has an invalid port")
        host = parts.hostname or ""
        if not host or parts.path not in ("", "/") or parts.query or parts.fragment:
            problems.append(f"CHROMA_HOST={raw_host!r} must be a host name, host:port or http(s)://host:port")
        if url_port is not None:
            if raw_port.isdigit() and int(raw_port) != url_port:
                problems.append(f"CHROMA_HOST={raw_host!r} and CHROMA_PORT={raw_port} name different ports")
            port = url_port
        if "://" in raw_host:
            url_ssl = parts.scheme == "https"
            if ssl is not None and ssl != url_ssl:
                problems.append(f"CHROMA_HOST={raw_host!r} and CHROMA_SSL={raw_ssl} disagree about TLS")
            ssl = url_ssl
        if env.get("SYMBIOTE_SHARE", "").strip().lower() not in ("", "off", "none"):
            problems.append(
                "CHROMA_HOST and SYMBIOTE_SHARE exclude each other: the file share and its writer lease are for "
                "the embedded store; with a Chroma server, the server holds the memories. Unset one of them"
            )
    else:
        for name in (
            "CHROMA_PORT",
            "CHROMA_SSL",
            "CHROMA_AUTH_TOKEN",
            "CHROMA_TENANT",
            "CHROMA_DATABASE",
            "CHROMA_KEYWORD_SYNC_SECONDS",
        ):
            if env.get(name, "").strip():
                problems.append(f"{name} is set but CHROMA_HOST is not: set CHROMA_HOST to use a Chroma server")
    if header:
        known = {h.lower(): h for h in CHROMA_AUTH_HEADERS}
        if header.lower() not in known:
            problems.append(f"CHROMA_AUTH_HEADER={header!r} must be one of {', '.join(CHROMA_AUTH_HEADERS)}")
        header = known.get(header.lower(), Settings.chroma_auth_header)
    return {
        "chroma_host": host,
        "chroma_port": port,
        "chroma_ssl": bool(ssl),
        "chroma_auth_token": token,
        "chroma_auth_header": header or Settings.chroma_auth_header,
        "chroma_tenant": tenant,
        "chroma_database": database,
        "chroma_keyword_sync_seconds": sync,
    }


def _limit_settings(env: Mapping[str, str], problems: list[str], integer: Any) -> dict[str, Any]:
    """MAX_MEMORIES, RETENTION_DAYS (both unset: unlimited, forever), the history write policy, the disk reserve."""
    raw_min = env.get("MEMORY_CONFIDENCE_MIN", "").strip()
    confidence_min = Settings.memory_confidence_min
    if raw_min:
        try:
            confidence_min = float(raw_min)
        except ValueError:
            problems.append(f"MEMORY_CONFIDENCE_MIN={raw_min!r} is not a number")
        else:
            if not 0 <= confidence_min <= 1:
                problems.append(f"MEMORY_CONFIDENCE_MIN={raw_min} must be from 0 to 1")
    max_memories = integer("MAX_MEMORIES", 0, 1, 100_000_000) if env.get("MAX_MEMORIES", "").strip() else None
    retention = integer("RETENTION_DAYS", 0, 1, 100_000) if env.get("RETENTION_DAYS", "").strip() else None
    return {
        "max_memories": max_memories,
        "retention_days": retention,
        "memory_confidence_min": confidence_min,
        "memory_max_per_window": integer("MEMORY_MAX_PER_WINDOW", Settings.memory_max_per_window, 1, 1000),
        "min_free_mb": integer("SYMBIOTE_MIN_FREE_MB", Settings.min_free_mb, 0, 1_000_000),
        "max_content_bytes": integer("SYMBIOTE_MAX_CONTENT_BYTES", Settings.max_content_bytes, 1_000, 10_000_000),
        "store_process": _on_off(env, "SYMBIOTE_STORE_PROCESS", Settings.store_process, problems),
    }


def _on_off(env: Mapping[str, str], name: str, default: bool, problems: list[str]) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ON_WORDS or raw in OFF_WORDS:
        return raw in ON_WORDS
    problems.append(f"{name}={raw!r} must be on/1/true/yes or off/0/false/no")
    return default
