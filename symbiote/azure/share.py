"""The file share that holds the memory store: a writer lease, snapshots and usage.

Chroma keeps its data in SQLite and HNSW files that only one process may write. On Azure the
data sits on an Azure Files share mounted into the container, and nothing in SMB (mounted with
`nobrl`, as SQLite there requires) stops a second instance from opening it too. So:

- **Writer lease.** The instance that writes holds a lease on a lock file in the share
  (`.symbiote/writer.lock`) and renews it; one that cannot get it refuses writes and says so.
  A holder that crashed stops renewing, so after `ttl` seconds its lease counts as stale and
  the next instance breaks it and takes over.
- **Snapshots.** A point-in-time copy of the whole share, taken while writes are quiesced,
  pruned to a configured count.
- **Usage.** Bytes used against the share's quota, with a warning from 90 %.

One small interface, `FileShare`, with two implementations:

- `LocalDirectoryShare`: a directory (local runs, docker-compose, tests). The lease is a JSON
  file created atomically; a snapshot is a copy under `.snapshots/`; the quota is the space
  the disk has left unless one is given.
- `AzureFileShare`: the Azure Files SDK (azure-storage-file-share). The lease is a real file
  lease (Azure file leases never expire, hence the renewal time kept in the file's metadata);
  snapshots are share snapshots. Authentication is a connection string, or the managed
  identity through `DefaultAzureCredential` with `token_intent="backup"`. Azure Files OAuth
  covers file operations only, so with an identity the share-level calls (snapshot, list,
  delete, usage) go to the control plane (Microsoft.Storage) instead of the data plane.

`WriterLease` keeps the lease in a background thread and answers "may this instance write?".
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import threading
import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import quote

from symbiote.errors import StoreUnavailableError

log = logging.getLogger(__name__)

WARN_PERCENT = 90.0
STATE_DIR = ".symbiote"
LOCK_NAME = "writer.lock"
SNAPSHOT_DIR = ".snapshots"
ARM_ENDPOINT = "https://management.azure.com"
ARM_API_VERSION = "2023-05-01"


class FileShareError(Exception):
    """The share could not do what was asked; the message says why."""


class LeaseHeldError(FileShareError):
    """Another instance holds a live writer lease."""

    def __init__(self, lease: "LeaseRecord") -> None:
        super().__init__(f"the writer lease is held by {lease.holder}")
        self.lease = lease


class LeaseLostError(FileShareError):
    """Our lease is gone: released, broken by another instance, or replaced."""


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LeaseRecord:
    """Who holds the writer lease and when they last proved they are alive."""

    holder: str
    lease_id: str
    acquired_at: float
    renewed_at: float
    ttl: float

    def stale(self, now: float) -> bool:
        return now > self.renewed_at + self.ttl

    def to_metadata(self) -> dict[str, str]:
        return {
            "holder": self.holder,
            "leaseid": self.lease_id,
            "acquiredat": f"{self.acquired_at:.3f}",
            "renewedat": f"{self.renewed_at:.3f}",
            "ttl": f"{self.ttl:g}",
        }

    @classmethod
    def from_metadata(cls, meta: dict[str, Any]) -> "LeaseRecord | None":
        meta = {str(k).lower(): v for k, v in (meta or {}).items()}
        try:
            return cls(
                holder=str(meta["holder"]),
                lease_id=str(meta.get("leaseid", "")),
                acquired_at=float(meta["acquiredat"]),
                renewed_at=float(meta["renewedat"]),
                ttl=float(meta["ttl"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def public(self) -> dict[str, Any]:
        return {
            "holder": self.holder,
            "acquired_at": _iso(self.acquired_at),
            "renewed_at": _iso(self.renewed_at),
            "expires_at": _iso(self.renewed_at + self.ttl),
        }


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str  # Azure: the snapshot's timestamp; local: its directory name. Sorts by time.
    created_at: datetime


@dataclass(frozen=True)
class ShareUsage:
    used_bytes: int
    quota_bytes: int | None

    @property
    def percent(self) -> float | None:
        if not self.quota_bytes:
            return None
        return round(100.0 * self.used_bytes / self.quota_bytes, 1)

    @property
    def warning(self) -> str | None:
        percent = self.percent
        if percent is None or percent < WARN_PERCENT:
            return None
        return (
            f"The file share is {percent:g}% full ({self.used_bytes / 1_048_576:.1f} MiB of "
            f"{self.quota_bytes / 1_048_576:.0f} MiB). Raise its quota or delete memories before writes start to fail."
        )

    def report(self) -> dict[str, Any]:
        return {
            "used_mb": round(self.used_bytes / 1_048_576, 3),
            "quota_mb": round(self.quota_bytes / 1_048_576, 1) if self.quota_bytes else None,
            "percent_used": self.percent,
            "warning": self.warning,
        }


class FileShare(Protocol):
    """What Symbiote needs from the storage under CHROMADB_PATH."""

    kind: str
    location: str

    def acquire_lease(self, holder: str, ttl: float) -> LeaseRecord: ...

    def renew_lease(self, lease: LeaseRecord) -> LeaseRecord: ...

    def release_lease(self, lease: LeaseRecord) -> None: ...

    def current_lease(self) -> LeaseRecord | None: ...

    def create_snapshot(self) -> Snapshot: ...

    def list_snapshots(self) -> list[Snapshot]: ...

    def delete_snapshot(self, snapshot: Snapshot) -> None: ...

    def usage(self) -> ShareUsage: ...


def prune_snapshots(share: FileShare, keep: int) -> list[Snapshot]:
    """Delete the oldest snapshots beyond the newest `keep`; returns what was deleted."""
    snapshots = sorted(share.list_snapshots(), key=lambda s: (s.created_at, s.snapshot_id))
    doomed = snapshots[: max(len(snapshots) - max(keep, 1), 0)]
    for snapshot in doomed:
        share.delete_snapshot(snapshot)
    return doomed


# -- a local directory -------------------------------------------------------------------------


class LocalDirectoryShare:
    """A directory standing in for the share: lease file, copy snapshots, disk usage."""

    kind = "local"

    def __init__(self, root: Path, *, quota_bytes: int | None = None, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.location = str(self.root)
        self.quota_bytes = quota_bytes
        self._clock = clock
        self._state = self.root / STATE_DIR
        self._lock = self._state / LOCK_NAME
        self._snapshots = self.root / SNAPSHOT_DIR

    # lease

    def acquire_lease(self, holder: str, ttl: float) -> LeaseRecord:
        self._state.mkdir(parents=True, exist_ok=True)
        now = self._clock()
        record = LeaseRecord(holder, uuid.uuid4().hex, now, now, ttl)
        current: LeaseRecord | None = None
        for _ in range(3):
            if self._create_exclusive(record):
                return record
            current = self._read(self._lock)
            if current is None:
                continue  # released between our two steps; try again
            if not current.stale(now):
                raise LeaseHeldError(current)
            log.warning("writer lease of %s is stale (last renewed %s); taking over", current.holder, _iso(current.renewed_at))
            self._take_over(current)
        raise LeaseHeldError(current or record)

    def renew_lease(self, lease: LeaseRecord) -> LeaseRecord:
        current = self._read(self._lock)
        if current is None or current.lease_id != lease.lease_id:
            raise LeaseLostError(
                f"the writer lease was taken by {current.holder}" if current else "the writer lease file is gone"
            )
        renewed = replace(lease, renewed_at=self._clock())
        self._write_replace(renewed)
        return renewed

    def release_lease(self, lease: LeaseRecord) -> None:
        current = self._read(self._lock)
        if current is not None and current.lease_id == lease.lease_id:
            self._lock.unlink(missing_ok=True)

    def current_lease(self) -> LeaseRecord | None:
        return self._read(self._lock)

    def _create_exclusive(self, record: LeaseRecord) -> bool:
        """Create the lock file with its content in one step (hard link); False if it exists."""
        tmp = self._state / f".{LOCK_NAME}.{record.lease_id}.tmp"
        tmp.write_text(json.dumps(record.to_metadata()))
        try:
            os.link(tmp, self._lock)
            return True
        except FileExistsError:
            return False
        except OSError:  # no hard links on this filesystem: exclusive create, then write
            try:
                fd = os.open(self._lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps(record.to_metadata()))
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def _write_replace(self, record: LeaseRecord) -> None:
        tmp = self._state / f".{LOCK_NAME}.{record.lease_id}.tmp"
        tmp.write_text(json.dumps(record.to_metadata()))
        os.replace(tmp, self._lock)

    def _read(self, path: Path) -> LeaseRecord | None:
        try:
            raw = path.read_text()
            stamp = path.stat().st_mtime
        except FileNotFoundError:
            return None
        try:
            found = LeaseRecord.from_metadata(json.loads(raw))
        except ValueError:
            found = None
        # Unreadable (half-written by a crash): treat it as a lease renewed when the file was written.
        return found or LeaseRecord("unknown", "", stamp, stamp, 60.0)

    def _take_over(self, stale: LeaseRecord) -> None:
        """Move the stale lock aside, unless its holder renewed it in the meantime."""
        aside = self._state / f"{LOCK_NAME}.{uuid.uuid4().hex}.stale"
        try:
            os.rename(self._lock, aside)
        except FileNotFoundError:
            return  # someone else moved it first
        moved = self._read(aside)
        if moved is not None and (moved.lease_id, moved.renewed_at) != (stale.lease_id, stale.renewed_at):
            try:  # it was renewed or replaced between our read and the move: put it back
                os.link(aside, self._lock)
            except OSError:
                pass
        aside.unlink(missing_ok=True)

    # snapshots

    def create_snapshot(self) -> Snapshot:
        self._snapshots.mkdir(parents=True, exist_ok=True)
        created = datetime.now(timezone.utc)
        name = created.strftime("%Y-%m-%dT%H-%M-%S.%fZ")
        while (self._snapshots / name).exists():
            name += "x"
        staging = self._snapshots / f".{name}.partial"
        root = self.root.resolve()

        def skip(directory: str, names: list[str]) -> list[str]:
            return [n for n in names if n in (STATE_DIR, SNAPSHOT_DIR)] if Path(directory).resolve() == root else []

        try:
            shutil.copytree(self.root, staging, symlinks=True, ignore=skip)
            os.rename(staging, self._snapshots / name)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return Snapshot(name, created)

    def list_snapshots(self) -> list[Snapshot]:
        if not self._snapshots.is_dir():
            return []
        found = []
        for entry in self._snapshots.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                try:
                    created = datetime.strptime(entry.name.rstrip("x"), "%Y-%m-%dT%H-%M-%S.%fZ")
                except ValueError:
                    continue
                found.append(Snapshot(entry.name, created.replace(tzinfo=timezone.utc)))
        return sorted(found, key=lambda s: (s.created_at, s.snapshot_id))

    def delete_snapshot(self, snapshot: Snapshot) -> None:
        target = self._snapshots / snapshot.snapshot_id
        if target.parent != self._snapshots or snapshot.snapshot_id.startswith("."):
            raise FileShareError(f"not a snapshot: {snapshot.snapshot_id!r}")
        shutil.rmtree(target, ignore_errors=False)

    def snapshot_path(self, snapshot: Snapshot) -> Path:
        return self._snapshots / snapshot.snapshot_id

    # usage

    def usage(self) -> ShareUsage:
        used = 0
        snapshots = self._snapshots.resolve()
        for directory, dirs, files in os.walk(self.root):
            if Path(directory).resolve() == snapshots.parent:
                dirs[:] = [d for d in dirs if d != SNAPSHOT_DIR]
            for name in files:
                try:
                    used += os.lstat(os.path.join(directory, name)).st_size
                except OSError:
                    pass
        quota = self.quota_bytes
        if quota is None and self.root.exists():
            quota = used + shutil.disk_usage(self.root).free
        return ShareUsage(used, quota)


# -- Azure Files -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShareResource:
    """The parts of a file share's ARM resource id."""

    subscription: str
    resource_group: str
    account: str
    share: str

    @classmethod
    def parse(cls, resource_id: str) -> "ShareResource":
        parts = resource_id.strip("/").split("/")
        keys = {parts[i].lower(): parts[i + 1] for i in range(0, len(parts) - 1, 2)}
        try:
            return cls(keys["subscriptions"], keys["resourcegroups"], keys["storageaccounts"], keys["shares"])
        except KeyError:
            raise FileShareError(f"not a file share resource id: {resource_id!r}") from None

    @property
    def arm_path(self) -> str:
        return (
            f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
            f"/providers/Microsoft.Storage/storageAccounts/{self.account}/fileServices/default/shares/{self.share}"
        )


def _snapshot_time(value: str) -> datetime:
    """Azure snapshot ids look like 2025-01-02T03:04:05.1234567Z (7 fractional digits)."""
    text = value.rstrip("Z")
    if "." in text:
        head, fraction = text.split(".", 1)
        text = f"{head}.{fraction[:6]}"
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


class ShareControl(Protocol):
    """Share-level operations: snapshots and usage."""

    def create_snapshot(self) -> Snapshot: ...

    def list_snapshots(self) -> list[Snapshot]: ...

    def delete_snapshot(self, snapshot: Snapshot) -> None: ...

    def usage(self) -> ShareUsage: ...


class DataPlaneControl:
    """Share-level operations through the data plane: needs the account key (connection string) or SAS."""

    def __init__(self, share_client: Any, service_client: Any) -> None:
        self._share = share_client
        self._service = service_client

    def create_snapshot(self) -> Snapshot:
        made = self._share.create_snapshot(metadata={"createdby": "symbiote"})
        return Snapshot(made["snapshot"], _snapshot_time(made["snapshot"]))

    def list_snapshots(self) -> list[Snapshot]:
        name = self._share.share_name
        found = [
            Snapshot(item.snapshot, _snapshot_time(item.snapshot))
            for item in self._service.list_shares(name_starts_with=name, include_snapshots=True)
            if item.name == name and item.snapshot
        ]
        return sorted(found, key=lambda s: (s.created_at, s.snapshot_id))

    def delete_snapshot(self, snapshot: Snapshot) -> None:
        self._service.get_share_client(self._share.share_name, snapshot=snapshot.snapshot_id).delete_share()

    def usage(self) -> ShareUsage:
        used = int(self._share.get_share_stats())
        quota_gib = self._share.get_share_properties().quota
        return ShareUsage(used, int(quota_gib) * 1024**3 if quota_gib else None)


class ArmControl:
    """Share-level operations through Azure Resource Manager, with an Entra ID token (managed identity).

    Azure Files OAuth on the data plane covers files and directories only; snapshots and share
    statistics with an identity go through Microsoft.Storage/storageAccounts/fileServices/shares.
    """

    def __init__(
        self,
        resource: ShareResource,
        credential: Any,
        *,
        endpoint: str = ARM_ENDPOINT,
        api_version: str = ARM_API_VERSION,
        transport: Any = None,
    ) -> None:
        from azure.core import PipelineClient
        from azure.core.pipeline import policies

        self._resource = resource
        self._api = api_version
        self._endpoint = endpoint.rstrip("/")
        config_policies = [
            policies.HeadersPolicy(),
            policies.UserAgentPolicy(sdk_moniker="symbiote"),
            policies.RetryPolicy(retry_total=3),
            policies.BearerTokenCredentialPolicy(credential, f"{self._endpoint}/.default"),
            policies.NetworkTraceLoggingPolicy(),
        ]
        kwargs = {"transport": transport} if transport is not None else {}
        self._client = PipelineClient(base_url=self._endpoint, policies=config_policies, **kwargs)

    def _call(self, method: str, path: str, params: dict[str, str], *, headers: dict[str, str] | None = None,
              body: Any = None) -> Any:
        from azure.core.exceptions import HttpResponseError
        from azure.core.rest import HttpRequest

        query = "&".join(f"{quote(k, safe='$')}={quote(v, safe='')}" for k, v in {**params, "api-version": self._api}.items())
        request = HttpRequest(method, f"{self._endpoint}{path}?{query}", headers=headers or {}, json=body)
        response = self._client.send_request(request)
        if response.status_code >= 400:
            raise HttpResponseError(response=response, message=f"{method} {path}: {response.status_code} {response.text()[:300]}")
        return response.json() if response.content else None

    def create_snapshot(self) -> Snapshot:
        made = self._call(
            "PUT", self._resource.arm_path, {"$expand": "snapshots"}, body={"properties": {"metadata": {"createdby": "symbiote"}}}
        )
        stamp = (made or {}).get("properties", {}).get("snapshotTime")
        if not stamp:
            raise FileShareError("the control plane did not return the new snapshot's time")
        return Snapshot(stamp, _snapshot_time(stamp))

    def list_snapshots(self) -> list[Snapshot]:
        path = self._resource.arm_path.rsplit("/", 1)[0]
        params = {"$expand": "snapshots", "$filter": f"startswith(name, '{self._resource.share}')"}
        found: list[Snapshot] = []
        page = self._call("GET", path, params)
        while page:
            for item in page.get("value", []):
                stamp = (item.get("properties") or {}).get("snapshotTime")
                if item.get("name") == self._resource.share and stamp:
                    found.append(Snapshot(stamp, _snapshot_time(stamp)))
            next_link = page.get("nextLink")
            if not next_link:
                break
            from azure.core.rest import HttpRequest

            page = self._client.send_request(HttpRequest("GET", next_link)).json()
        return sorted(found, key=lambda s: (s.created_at, s.snapshot_id))

    def delete_snapshot(self, snapshot: Snapshot) -> None:
        self._call("DELETE", self._resource.arm_path, {}, headers={"x-ms-snapshot": snapshot.snapshot_id})

    def usage(self) -> ShareUsage:
        share = self._call("GET", self._resource.arm_path, {"$expand": "stats"}) or {}
        props = share.get("properties") or {}
        quota_gib = props.get("shareQuota")
        return ShareUsage(int(props.get("shareUsageBytes") or 0), int(quota_gib) * 1024**3 if quota_gib else None)


class AzureFileShare:
    """An Azure Files share: file lease on the lock file (data plane), snapshots and usage via `control`."""

    kind = "azure"

    def __init__(self, share_client: Any, control: ShareControl, *, clock: Callable[[], float] = time.time) -> None:
        self._share = share_client
        self._control = control
        self._clock = clock
        self._dir = share_client.get_directory_client(STATE_DIR)
        self._file = share_client.get_file_client(f"{STATE_DIR}/{LOCK_NAME}")
        self.location = share_client.url

    # lease

    def _ensure_lock_file(self) -> None:
        from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

        try:
            self._file.get_file_properties()
            return
        except ResourceNotFoundError:
            pass
        try:
            self._dir.create_directory()
        except ResourceExistsError:
            pass
        try:
            self._file.create_file(size=0)
        except (ResourceExistsError, HttpResponseError) as exc:  # created and leased by another instance meanwhile
            if getattr(exc, "status_code", None) not in (409, 412):
                raise

    def acquire_lease(self, holder: str, ttl: float) -> LeaseRecord:
        from azure.core.exceptions import HttpResponseError
        from azure.storage.fileshare import ShareLeaseClient

        self._ensure_lock_file()
        for _ in range(2):
            lease_id = str(uuid.uuid4())
            try:
                self._file.acquire_lease(lease_id=lease_id)
            except HttpResponseError as exc:
                if exc.status_code != 409:
                    raise
                current = self.current_lease()
                now = self._clock()
                if current is not None and not current.stale(now):
                    raise LeaseHeldError(current) from None
                log.warning(
                    "writer lease of %s is stale; breaking it",
                    current.holder if current else "an instance that never recorded itself",
                )
                ShareLeaseClient(self._file).break_lease()
                continue
            now = self._clock()
            record = LeaseRecord(holder, lease_id, now, now, ttl)
            try:
                self._file.set_file_metadata(record.to_metadata(), lease=lease_id)
            except HttpResponseError as exc:  # broken by another instance between our two calls
                if exc.status_code == 412:
                    raise LeaseLostError("the writer lease was broken while it was being taken") from None
                raise
            return record
        current = self.current_lease()
        raise LeaseHeldError(current or LeaseRecord("unknown", "", 0.0, self._clock(), ttl))

    def renew_lease(self, lease: LeaseRecord) -> LeaseRecord:
        from azure.core.exceptions import HttpResponseError

        renewed = replace(lease, renewed_at=self._clock())
        try:
            self._file.set_file_metadata(renewed.to_metadata(), lease=lease.lease_id)
        except HttpResponseError as exc:
            if exc.status_code in (409, 412):
                raise LeaseLostError(f"the writer lease is no longer ours ({exc.error_code or exc.status_code})") from None
            raise
        return renewed

    def release_lease(self, lease: LeaseRecord) -> None:
        from azure.core.exceptions import HttpResponseError
        from azure.storage.fileshare import ShareLeaseClient

        try:
            ShareLeaseClient(self._file, lease_id=lease.lease_id).release()
        except HttpResponseError as exc:
            if exc.status_code not in (409, 412):
                raise

    def current_lease(self) -> LeaseRecord | None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            props = self._file.get_file_properties()
        except ResourceNotFoundError:
            return None
        if getattr(props.lease, "state", None) != "leased":
            return None
        found = LeaseRecord.from_metadata(props.metadata or {})
        if found is None:  # leased but never described: judge it by the file's last change
            changed = props.last_modified.timestamp() if props.last_modified else self._clock()
            found = LeaseRecord("unknown", "", changed, changed, 60.0)
        return found

    # share-level

    def create_snapshot(self) -> Snapshot:
        return self._control.create_snapshot()

    def list_snapshots(self) -> list[Snapshot]:
        return self._control.list_snapshots()

    def delete_snapshot(self, snapshot: Snapshot) -> None:
        self._control.delete_snapshot(snapshot)

    def usage(self) -> ShareUsage:
        return self._control.usage()


def open_share(settings: Any, *, credential: Any = None, transport: Any = None) -> FileShare | None:
    """The share the settings describe, or None when SYMBIOTE_SHARE is unset.

    `credential` and `transport` are for tests and unusual hosts; by default a managed identity
    is used through DefaultAzureCredential (with AZURE_CLIENT_ID for a user-assigned one).
    """
    if settings.share == "local":
        return LocalDirectoryShare(settings.share_path)
    if settings.share != "azure":
        return None
    from azure.storage.fileshare import ShareClient, ShareServiceClient

    extra = {"transport": transport} if transport is not None else {}
    if settings.share_connection_string:
        resource = ShareResource.parse(settings.share_resource_id) if settings.share_resource_id else None
        name = settings.share_name or (resource.share if resource else "")
        share_client = ShareClient.from_connection_string(settings.share_connection_string, name, **extra)
        service = ShareServiceClient.from_connection_string(settings.share_connection_string, **extra)
        return AzureFileShare(share_client, DataPlaneControl(share_client, service))
    resource = ShareResource.parse(settings.share_resource_id)
    if credential is None:
        from azure.identity import DefaultAzureCredential

        credential = DefaultAzureCredential(managed_identity_client_id=settings.managed_identity_client_id or None)
    account_url = settings.share_account_url or f"https://{resource.account}.file.core.windows.net"
    share_client = ShareClient(
        account_url, settings.share_name or resource.share, credential=credential, token_intent="backup", **extra
    )
    return AzureFileShare(share_client, ArmControl(resource, credential, transport=transport))


# -- keeping the lease -------------------------------------------------------------------------


class WriterLeaseError(StoreUnavailableError):
    """Writes are refused because this instance does not hold the writer lease."""


def default_holder() -> str:
    """Who we are, as other instances will see it: the replica (Container Apps) or host, plus the pid."""
    name = os.environ.get("CONTAINER_APP_REPLICA_NAME") or socket.gethostname()
    return f"{name}/pid{os.getpid()}/{uuid.uuid4().hex[:6]}"


class WriterLease:
    """Holds the writer lease (renewing it) or waits for it (retrying), in a daemon thread.

    `held` turns false when renewals have failed for most of the lease's life, before other
    instances may consider it stale, so two writers never overlap.
    """

    SAFETY = 0.8  # fraction of ttl after the last renewal during which we still consider ourselves the writer

    def __init__(
        self,
        share: FileShare,
        *,
        ttl: float = 60.0,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
        on_acquired: Callable[[], None] | None = None,
    ) -> None:
        self.share = share
        self.ttl = float(ttl)
        self.holder = holder or default_holder()
        self.generation = 0  # how many times this instance has acquired the lease
        self._clock = clock
        self._on_acquired = on_acquired
        self._lease: LeaseRecord | None = None
        self._other: LeaseRecord | None = None
        self._error: str | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def interval(self) -> float:
        return max(self.ttl / 3.0, 0.05)

    def start(self) -> "WriterLease":
        """Try once now (so health is right from the start), then keep trying in the background."""
        self.attempt()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="writer-lease", daemon=True)
            self._thread.start()
        return self

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        with self._lock:
            lease, self._lease = self._lease, None
        if release and lease is not None:
            try:
                self.share.release_lease(lease)
                log.info("writer lease released")
            except Exception as exc:  # the next instance will find it stale instead
                log.warning("releasing the writer lease failed: %s", exc)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.attempt()

    def attempt(self) -> bool:
        """Renew the lease if we hold it, else try to take it. Returns whether we hold it now."""
        acquired = False
        with self._lock:
            if self._stop.is_set() and self._thread is not None:
                return False
            if self._lease is not None:
                try:
                    self._lease = self.share.renew_lease(self._lease)
                    self._error = None
                except LeaseLostError as exc:
                    log.error("lost the writer lease: %s; writes are refused until it is back", exc)
                    self._lease = None
                    self._error = str(exc)
                except Exception as exc:
                    log.warning("renewing the writer lease failed (will retry): %s", exc)
                    self._error = f"renewing the lease failed: {exc}"
            if self._lease is None:
                try:
                    self._lease = self.share.acquire_lease(self.holder, self.ttl)
                    self._other = None
                    self._error = None
                    self.generation += 1
                    acquired = True
                    log.info("writer lease acquired by %s on %s", self.holder, self.share.location)
                except LeaseHeldError as exc:
                    if self._other is None or self._other.holder != exc.lease.holder:
                        log.warning("writer lease held by %s; this instance refuses writes", exc.lease.holder)
                    self._other = exc.lease
                    self._error = None
                except Exception as exc:
                    log.warning("taking the writer lease failed (will retry): %s", exc)
                    self._error = f"the share could not be reached: {exc}"
            held = self.held
        if acquired and self._on_acquired is not None:
            try:
                self._on_acquired()
            except Exception:
                log.exception("after taking the writer lease")
        return held

    @property
    def held(self) -> bool:
        lease = self._lease
        return lease is not None and self._clock() < lease.renewed_at + self.ttl * self.SAFETY

    def refusal(self) -> str:
        """Why writes are refused, for the person who will read the tool error."""
        retry = f"If the other instance has stopped, its lease expires within {self.ttl:g} s and this one takes over."
        if self._other is not None:
            age = max(self._clock() - self._other.renewed_at, 0.0)
            return (
                f"This memory server is read-only right now: another instance ({self._other.holder}, "
                f"last seen {age:.0f} s ago) holds the writer lease on the memory store, and two writers "
                f"would corrupt it. Searching still works; try saving again in a minute. {retry}"
            )
        reason = self._error or "the writer lease is not held"
        return (
            f"This memory server is read-only right now: {reason}. Writes are refused rather than risking the "
            f"memory store; try again in a minute. {retry}"
        )

    def check_writable(self) -> None:
        if not self.held:
            raise WriterLeaseError(self.refusal())

    def status(self) -> dict[str, Any]:
        lease = self._lease
        if self.held and lease is not None:
            return {"state": "writer", "holder": self.holder, "lease": lease.public()}
        report: dict[str, Any] = {"state": "standby", "holder": self.holder, "message": self.refusal()}
        if self._other is not None:
            report["writer"] = self._other.public()
        return report
