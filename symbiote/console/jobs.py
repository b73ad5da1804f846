"""Imports started from the console: the file arrives in parts, then is imported in the background.

A browser sends the file in parts each well under the server's request body cap
(SYMBIOTE_MAX_BODY_BYTES), so a large export can come back in without raising the cap for
everything else. The parts go to a private file in the data directory (`import-uploads/`, never
a shared temporary directory: it holds memories); the import then runs as a task of its own
while the page polls its progress. One import runs at a time; a job and its file are forgotten
an hour after it was made, and every upload left is removed when the server stops and starts. Jobs live in this server process: behind several
instances, the parts of one upload must reach the same one (as they do with one replica).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from symbiote.errors import SymbioteError
from symbiote.transfer import ImportReport

log = logging.getLogger(__name__)

MAX_IMPORT_BYTES = 1024 * 1024 * 1024
JOB_SECONDS = 3600.0
MAX_JOBS = 20
MAX_UPLOADING = 2  # uploads under way at once (one import runs at a time anyway)
UPLOAD_IDLE_SECONDS = 600.0  # an upload that sends no part for this long is dropped, its file removed
FREE_BYTES = 1024 * 1024 * 1024  # room left on the data directory's disk after an upload's part, at least
UPLOADS = "import-uploads"  # in the data directory

RunImport = Callable[
    [Path, bool, bool, Callable[[int], None]], Awaitable[ImportReport]
]  # the uploaded file (its format told by what it holds), dry run, replace, progress


CANCELLED = "Cancelled: what was imported before stays (each batch of memories is whole); nothing after it was."


class JobError(SymbioteError):
    """A part or a start that cannot be taken; the message says why."""


@dataclass
class ImportJob:
    job_id: str
    path: Path
    name: str = ""  # the file's name, as the browser gave it (shown in the list of imports)
    created: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)  # wall time, for the list
    received: int = 0
    touched: float = field(default_factory=time.monotonic)  # when a part last arrived
    state: str = "uploading"  # uploading, waiting, running, done, failed
    dry_run: bool = False
    replace: bool = False
    done_bytes: int = 0
    report: ImportReport | None = None
    error: str = ""
    task: asyncio.Task[None] | None = None
    cancelling: bool = False  # asked to stop: it finishes the batch in hand, then shows as cancelled

    @property
    def percent(self) -> int:
        if self.state == "done":
            return 100
        return int(100 * self.done_bytes / self.received) if self.received else 0


class ImportJobs:
    """The console's import jobs in this process."""

    def __init__(self, run_import: RunImport, directory: Path, max_bytes: int = MAX_IMPORT_BYTES) -> None:
        """`directory`: where uploads are kept (made private on first use); whatever an earlier
        server left there is removed now."""
        self._run_import = run_import
        self._directory = directory
        self._max_bytes = max_bytes
        self._jobs: dict[str, ImportJob] = {}
        self._one_at_a_time = asyncio.Lock()
        self._clear()

    def create(self, name: str = "") -> ImportJob:
        """A new import; refused while another is waiting or running (one at a time, and a second
        click must not queue the same file again)."""
        self._forget_old()
        if self.busy:
            raise JobError("Another import is running: wait for it to finish (it is listed on this page).")
        if sum(job.state == "uploading" for job in self._jobs.values()) >= MAX_UPLOADING:
            raise JobError("Another upload is under way: wait for it to finish, or ten minutes for it to be dropped.")
        if len(self._jobs) >= MAX_JOBS:
            finished = [job for job in self._jobs.values() if job.state in ("done", "failed")]
            if not finished:
                raise JobError("Too many imports are waiting; try again later.")
            oldest = min(finished, key=lambda job: job.created)  # its report gives way to a new import
            oldest.path.unlink(missing_ok=True)
            del self._jobs[oldest.job_id]
        job_id = secrets.token_urlsafe(12)
        path = self._directory / f"{job_id}.upload"
        try:
            self._directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # readable by this user only
        except OSError as exc:
            raise JobError(f"The upload cannot be kept in {self._directory} ({exc.strerror}).") from exc
        job = ImportJob(job_id, path, name=" ".join(name.split())[:200])
        self._jobs[job.job_id] = job
        return job

    def get(self, job_id: str) -> ImportJob | None:
        return self._jobs.get(job_id)

    def recent(self) -> list[ImportJob]:
        """The imports this server still knows (for an hour), newest first: found again after leaving the page."""
        self._forget_old()
        return sorted(
            (job for job in self._jobs.values() if job.state != "uploading"), key=lambda job: job.created, reverse=True
        )

    @property
    def busy(self) -> bool:
        """Whether an import is waiting or running."""
        return any(job.state in ("waiting", "running") for job in self._jobs.values())

    async def append(self, job: ImportJob, data: bytes) -> None:
        if job.state != "uploading":
            raise JobError("This import has already started.")
        if job.received + len(data) > self._max_bytes:
            raise JobError(
                f"Files over {self._max_bytes // (1024 * 1024)} MiB cannot be imported from the console; "
                "use `symbiote import FILE` on the server."
            )
        free = (await asyncio.to_thread(shutil.disk_usage, self._directory)).free
        if free - len(data) < FREE_BYTES:
            raise JobError(
                f"The server's disk has less than {FREE_BYTES // (1024 * 1024)} MiB free beyond this upload, so it "
                "was stopped: the memories need that room more."
            )
        await asyncio.to_thread(_append, job.path, data)
        job.received += len(data)
        job.touched = time.monotonic()

    def start(self, job: ImportJob, dry_run: bool, replace: bool = False) -> None:
        if job.state != "uploading":
            raise JobError("This import has already started.")
        job.state, job.dry_run, job.replace = "waiting", dry_run, replace
        job.task = asyncio.create_task(self._run(job))

    async def _run(self, job: ImportJob) -> None:
        def progress(done: int) -> None:
            job.done_bytes = done

        async with self._one_at_a_time:
            job.state = "running"
            try:
                job.report = await self._run_import(job.path, job.dry_run, job.replace, progress)
                job.state = "done"
            except asyncio.CancelledError:
                job.state, job.error = "failed", CANCELLED
                raise
            except SymbioteError as exc:
                job.state, job.error = "failed", str(exc)
            except Exception as exc:  # reported on the page; the trace goes to the log
                log.exception("console import failed")
                job.state, job.error = "failed", f"The import failed: {exc}"
            finally:
                job.path.unlink(missing_ok=True)

    def cancel(self, job: ImportJob) -> None:
        """Stop an import waiting or running: its reader is killed and it ends between two batches,
        each whole (what was stored before stays)."""
        if job.state not in ("waiting", "running") or job.task is None:
            raise JobError("This import is not running.")
        job.cancelling = True
        job.task.cancel()

    def _forget_old(self) -> None:
        now = time.monotonic()
        for job_id, job in list(self._jobs.items()):
            idle = job.state == "uploading" and now - job.touched > UPLOAD_IDLE_SECONDS
            if idle or (now - job.created > JOB_SECONDS and job.state in ("uploading", "done", "failed")):
                job.path.unlink(missing_ok=True)
                del self._jobs[job_id]

    def close(self) -> None:
        """At shutdown: imports under way are cancelled (each batch is all or nothing) and every upload goes."""
        for job in self._jobs.values():
            if job.task is not None:
                job.task.cancel()
        self._jobs.clear()
        self._clear()

    def _clear(self) -> None:
        try:
            shutil.rmtree(self._directory)
        except FileNotFoundError:
            pass
        except OSError as exc:  # reported, and tried again at the next start or stop
            log.warning("import uploads in %s could not be removed: %s", self._directory, exc)


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as out:
        out.write(data)
