"""Where the recorded handshake answers live: the data directory, and the user's cache directory.

The answers depend on the code and the settings, not on where the memories are (the fingerprint
leaves `CHROMADB_PATH` out). So besides `<data dir>/<name>`, every recording is also kept in
`$XDG_CACHE_HOME/symbiote/` (default `~/.cache/symbiote/`) under its fingerprint: a server
started on a new data directory, or by a client that names another one, answers at once too.
That directory keeps the newest few recordings; writing either place may fail (a read-only
home, an unwritable data directory), which only means the next start answers a little later.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from symbiote.config import Settings

log = logging.getLogger(__name__)

USER_CACHE_KEEP = 8  # recordings kept in the user's cache directory, newest first


def user_cache_dir() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home directory
            return None
    return Path(base) / "symbiote"


def locations(settings: Settings, name: str, print_: str) -> list[Path]:
    """Where a recording named `name` for fingerprint `print_` may be: the data directory first."""
    paths = [settings.chromadb_path / name]
    user = user_cache_dir()
    if user is not None:
        stem, _, suffix = name.rpartition(".")
        paths.append(user / f"{stem}-{print_[:24]}.{suffix}")
    return paths


def read(settings: Settings, name: str, form: int, print_: str) -> dict[str, Any] | None:
    """The first recording found that has this format and fingerprint; None if there is none."""
    for path in locations(settings, name, print_):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(raw, dict) and raw.get("format") == form and raw.get("fingerprint") == print_:
            return raw
    return None


def write(settings: Settings, name: str, data: dict[str, Any]) -> Path | None:
    """Write to both places, each atomically; where it was written first (None: nowhere)."""
    paths = locations(settings, name, str(data["fingerprint"]))
    encoded = json.dumps(data).encode("utf-8")
    written = [path for path in paths if write_atomically(path, encoded)]
    if len(paths) > 1 and paths[1] in written:
        _prune(paths[1].parent, name.rpartition(".")[0])
    return written[0] if written else None


def forget(settings: Settings, name: str, print_: str) -> None:
    """Remove the recording for fingerprint `print_` from both places (the SDK disagreed with it);
    a newer one another server wrote meanwhile stays."""
    for path in locations(settings, name, print_):
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("fingerprint") == print_:
                path.unlink()
        except (OSError, ValueError, AttributeError) as exc:
            log.debug("did not remove %s (%s)", path, exc)


def write_atomically(path: Path, data: bytes) -> bool:
    """Replace `path` with `data` in one step (a reader sees the old file or the new one, never
    half of one); False where it cannot be written, which for a cache only costs time."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return True
    except OSError as exc:
        log.debug("%s not written (%s)", path, exc)
        with contextlib.suppress(OSError):  # e.g. its directory is a file: there is no tmp either
            tmp.unlink(missing_ok=True)
        return False


def _prune(directory: Path, stem: str) -> None:
    """Keep the newest USER_CACHE_KEEP recordings of this kind (each code change makes a new one)."""
    try:
        found = sorted(directory.glob(f"{stem}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in found[USER_CACHE_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("could not prune %s (%s)", directory, exc)
