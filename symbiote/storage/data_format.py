"""The data directory's format version, recorded in it, so that data is opened by design, not luck.

Every release that writes a data directory records the format it writes in `symbiote-format.json`
(`{"format": 1}`). A directory without one was written by a release from before the file (the
format 1 layout: Chroma's files, the keyword index, the sign-in database), so opening it records
format 1 and goes on as before. A directory whose recorded format is newer than this code knows was
written by a later release, whose changes this one cannot know: it is refused, with the file and
both versions named, and never written to, so going back to the newer release finds it intact.
A release that changes the layout raises FORMAT_VERSION and converts older directories on open.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from symbiote.errors import DataFormatError

FORMAT_FILE = "symbiote-format.json"
FORMAT_VERSION = 1  # the layout of 2026-11-23 (release 4344135) and after


def recorded_format(path: Path) -> int | None:
    """The format recorded in the data directory `path`, None where none is (a new or older directory).

    Raises DataFormatError for a format newer than FORMAT_VERSION, or a file that does not say one.
    """
    file = path / FORMAT_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # none yet; a path that is no directory is for the opener to report
        return None
    except OSError as exc:
        raise DataFormatError(
            f"The data directory's format file {str(file)!r} cannot be read ({exc.strerror or exc}); "
            "fix its permissions. Nothing in the directory was changed."
        ) from exc
    try:
        version = json.loads(text)["format"]
    except (ValueError, TypeError, KeyError) as exc:
        raise _refusal(file, f"it does not record a format this release can read ({text[:60]!r})") from exc
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _refusal(file, f"it records format {version!r}, which no release writes")
    if version > FORMAT_VERSION:
        raise _refusal(
            file, f"it records format {version}, newer than format {FORMAT_VERSION}, the newest this release knows"
        )
    return version


def _refusal(file: Path, problem: str) -> DataFormatError:
    return DataFormatError(
        f"The data directory {str(file.parent)!r} is not opened: its format file {str(file)!r} says {problem}. "
        "A newer release of Symbiote wrote it: run that release (or a newer one) on it, or restore the directory "
        "from a backup. Nothing in it was changed."
    )


def record_format(path: Path) -> int:
    """Check the data directory `path` (which exists) and record the format where none is yet.

    A directory without the file, new or written by an older release, is format 1; the file is
    written whole or not at all (a temporary file renamed into place). Returns the format.
    """
    version = recorded_format(path)
    if version is not None:
        return version
    file = path / FORMAT_FILE
    partial = path / f".{FORMAT_FILE}.{os.getpid()}.tmp"
    partial.write_text(json.dumps({"format": FORMAT_VERSION}) + "\n", encoding="utf-8")
    os.replace(partial, file)
    return FORMAT_VERSION
