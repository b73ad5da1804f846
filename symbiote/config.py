"""Every setting Symbiote reads, in one place, from environment variables.

Settings are parsed once at start and validated all together, so a bad deployment fails with
one message listing every problem instead of a crash later on the first request.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TRANSPORTS = ("http", "sse", "stdio")


class ConfigError(ValueError):
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
    model_dir: Path = PROJECT_ROOT / "models" / "all-MiniLM-L6-v2"
    personalities_dir: Path = PROJECT_ROOT / "personalities"
    embed_cache_size: int = 2048

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Read and validate the environment; raise ConfigError naming every bad variable."""
        env = os.environ if environ is None else environ
        problems: list[str] = []

        def integer(name: str, default: int, low: int, high: int) -> int:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                value = int(raw)
            except ValueError:
                problems.append(f"{name}={raw!r} is not a whole number")
                return default
            if not low <= value <= high:
                problems.append(f"{name}={value} is out of range ({low}..{high})")
            return value

        port = integer("PORT", 8000, 1, 65535)
        cache = integer("SYMBIOTE_EMBED_CACHE_SIZE", 2048, 0, 1_000_000)
        log_level = env.get("LOG_LEVEL", "INFO").strip().upper() or "INFO"
        if log_level not in LOG_LEVELS:
            problems.append(f"LOG_LEVEL={log_level!r} must be one of {', '.join(LOG_LEVELS)}")
            log_level = "INFO"
        host = env.get("HOST", "127.0.0.1").strip() or "127.0.0.1"
        chroma = env.get("CHROMADB_PATH", "./data").strip() or "./data"
        model_dir = env.get("SYMBIOTE_MODEL_DIR", "").strip()
        personalities = env.get("SYMBIOTE_PERSONALITIES_DIR", "").strip()
        if problems:
            raise ConfigError("Invalid configuration:\n  - " + "\n  - ".join(problems))
        return cls(
            host=host,
            port=port,
            chromadb_path=Path(chroma).expanduser(),
            personality=env.get("VENOM_PERSONALITY", "").strip() or "default",
            log_level=log_level,
            allowed_hosts=_split(env.get("SYMBIOTE_ALLOWED_HOSTS", "")),
            allowed_origins=_split(env.get("SYMBIOTE_ALLOWED_ORIGINS", "")),
            model_dir=Path(model_dir).expanduser() if model_dir else cls.model_dir,
            personalities_dir=Path(personalities).expanduser() if personalities else cls.personalities_dir,
            embed_cache_size=cache,
        )
