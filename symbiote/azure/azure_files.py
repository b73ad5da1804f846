"""The file share on Azure Files, through the SDK (azure-storage-file-share).

The writer lease is a real file lease on the lock file (Azure file leases never expire, hence
the renewal time kept in the file's metadata); snapshots are share snapshots. Authentication is
a connection string, or the managed identity through `DefaultAzureCredential` with
`token_intent="backup"`. Azure Files OAuth covers file operations only, so with an identity the
share-level calls (snapshot, list, delete, usage) go to the control plane (Microsoft.Storage)
instead of the data plane.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

from symbiote.azure.local_share import LocalDirectoryShare
from symbiote.azure.share import (
    LOCK_NAME,
    STATE_DIR,
    FileShare,
    FileShareError,
    LeaseHeldError,
    LeaseLostError,
    LeaseRecord,
    ShareUsage,
    Snapshot,
)

log = logging.getLogger(__name__)

ARM_ENDPOINT = "https://management.azure.com"
ARM_API_VERSION = "2023-05-01"


@dataclass(frozen=True)
class ShareResource:
    """The parts of a file share's ARM resource id."""

    subscription: str
    resource_group: str
    account: str
    share: str

    @classmethod
    def parse(cls, resource_id: str) -> ShareResource:
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
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


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

    def _call(
        self, method: str, path: str, params: dict[str, str], *, headers: dict[str, str] | None = None, body: Any = None
    ) -> Any:
        from azure.core.exceptions import HttpResponseError
        from azure.core.rest import HttpRequest

        query = "&".join(
            f"{quote(k, safe='$')}={quote(v, safe='')}" for k, v in {**params, "api-version": self._api}.items()
        )
        request = HttpRequest(method, f"{self._endpoint}{path}?{query}", headers=headers or {}, json=body)
        response = self._client.send_request(request)
        if response.status_code >= 400:
            raise HttpResponseError(
                response=response, message=f"{method} {path}: {response.status_code} {response.text()[:300]}"
            )
        return response.json() if response.content else None

    def create_snapshot(self) -> Snapshot:
        made = self._call(
            "PUT",
            self._resource.arm_path,
            {"$expand": "snapshots"},
            body={"properties": {"metadata": {"createdby": "symbiote"}}},
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
            if exc.status_code not in (409, 412):
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
                code = vars(exc).get("error_code")  # set by azure-storage on the error, not declared by azure-core
                raise LeaseLostError(f"the writer lease is no longer ours ({code or exc.status_code})") from None
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
        if props.lease is None or props.lease.state != "leased":
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
