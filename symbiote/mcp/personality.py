"""Venom's personality prompts, chosen by VENOM_PERSONALITY and read from `personalities/`.

An unknown variant must not take the server down (a typo in a portal setting would otherwise
break every client): it falls back to the default and logs a warning.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_VARIANT = "default"
_DEFAULT_FILE = "venom_personality.md"
_VARIANT_NAME = re.compile(r"^[a-z0-9_-]{1,40}$")


@dataclass(frozen=True)
class Personality:
    variant: str  # the variant actually in use
    requested: str  # what configuration asked for
    text: str

    @property
    def fell_back(self) -> bool:
        return self.variant != self.requested


def _file_for(variant: str) -> str:
    """`default` is venom_personality.md; `variant2` is venom_personality_v2.md; `x` is venom_personality_x.md."""
    if variant == DEFAULT_VARIANT:
        return _DEFAULT_FILE
    match = re.fullmatch(r"variant(\d+)", variant)
    suffix = f"v{match.group(1)}" if match else variant
    return f"venom_personality_{suffix}.md"


def available(directory: Path) -> list[str]:
    names = [DEFAULT_VARIANT] if (directory / _DEFAULT_FILE).is_file() else []
    for path in sorted(directory.glob("venom_personality_*.md")):
        suffix = path.stem.removeprefix("venom_personality_")
        names.append(f"variant{suffix[1:]}" if re.fullmatch(r"v\d+", suffix) else suffix)
    return names


def load_personality(directory: Path, requested: str) -> Personality:
    """The requested variant, or the default (with a warning) when it does not exist."""
    requested = (requested or DEFAULT_VARIANT).strip().lower()
    if _VARIANT_NAME.match(requested):
        path = directory / _file_for(requested)
        if path.is_file():
            return Personality(requested, requested, path.read_text(encoding="utf-8"))
    default = directory / _DEFAULT_FILE
    if not default.is_file():
        raise FileNotFoundError(f"The default personality {default} is missing; reinstall Symbiote.")
    log.warning(
        "VENOM_PERSONALITY=%r is not a known personality (available: %s); using the default",
        requested,
        ", ".join(available(directory)),
    )
    return Personality(DEFAULT_VARIANT, requested, default.read_text(encoding="utf-8"))
