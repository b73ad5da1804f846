"""The settings every command starts from, or the reason they are wrong and an exit."""

from __future__ import annotations

import sys

from symbiote.config import ConfigError, Settings


def settings_from_env() -> Settings:
    """The settings from the environment; a configuration error ends the command with status 2."""
    try:
        return Settings.from_env()
    except ConfigError as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
