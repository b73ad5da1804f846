"""The file share: writer lease, snapshots, usage, and what the app does with them.

The local-directory share is tested for real, across processes (a holder killed with SIGKILL,
racing contenders). The Azure share runs the real azure-storage-file-share SDK and azure-core
pipeline (auth policies, serialization, error mapping) over a `requests` adapter that plays the
Azure Files service and the Microsoft.Storage control plane: that service is the only fake.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import formatdate
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import numpy as np
import pytest
import requests
from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError
from azure.core.pipeline.transport import RequestsTransport
from requests.structures import CaseInsensitiveDict

from symbiote.azure.azure_files import AzureFileShare, open_share
from symbiote.azure.guard import LeaseGuard, WriteGate
from symbiote.azure.lease import WriterLease, WriterLeaseError
from symbiote.azure.local_share import LocalDirectoryShare
from symbiote.azure.share import (
    FileShareError,
    LeaseHeldError,
    LeaseLostError,
    LeaseRecord,
    ShareUsage,
    Snapshot,
    prune_snapshots,
)
from symbiote.azure.snapshots import SnapshotJob
from symbiote.config import ConfigError, Settings
from symbiote.errors import StoreUnavailableError
from symbiote.http.security import allowed_hosts
from symbiote.platform_hosts import normalize_host, platform_hosts
from symbiote.storage import Local, MemoryStore, StoredMemory
from symbiote.storage.chroma import open_embedded_store
from tests.conftest import make_runtime, shared_model

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- platform host names -------------------------------------------------------------------------


def test_platform_hosts_from_functions_and_container_apps_environment():
    env = {
        "WEBSITE_HOSTNAME": "Symbiote.AzureWebsites.net",
        "CONTAINER_APP_NAME": "symbiote",
        "CONTAINER_APP_ENV_DNS_SUFFIX": "happy-sea-123.eastus.azurecontainerapps.io",
        "CONTAINER_APP_HOSTNAME": "symbiote--rev1.happy-sea-123.eastus.azurecontainerapps.io",
    }
    assert platform_hosts(env) == (
        "symbiote.azurewebsites.net",
        "symbiote.happy-sea-123.eastus.azurecontainerapps.io",
        "symbiote--rev1.happy-sea-123.eastus.azurecontainerapps.io",
    )
    assert platform_hosts({"CONTAINER_APP_NAME": "only-name"}) == ()
    assert platform_hosts({"WEBSITE_HOSTNAME": "localhost:7071"}) == ("localhost",)
    assert normalize_host("https://x.example.com:443/mcp") == "x.example.com"
    assert normalize_host("bad host!") is None and normalize_host("[::1]:80") is None


def test_settings_and_security_accept_platform_and_configured_hosts():
    settings = Settings.from_env(
        {"WEBSITE_HOSTNAME": "fn.azurewebsites.net", "SYMBIOTE_ALLOWED_HOSTS": "memory.example.com"}
    )
    hosts = allowed_hosts(settings)
    for name in ("fn.azurewebsites.net", "memory.example.com", "127.0.0.1"):
        assert name in hosts and f"{name}:*" in hosts


def test_share_settings_are_validated_together():
    with pytest.raises(ConfigError) as err:
        Settings.from_env(
            {"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SNAPSHOT_KEEP": "0", "SYMBIOTE_SNAPSHOT_SCHEDULE": "daily"}
        )
    text = str(err.value)
    assert "SYMBIOTE_SHARE_RESOURCE_ID" in text and "SYMBIOTE_SNAPSHOT_KEEP" in text and "SIX fields".lower() in text
    with pytest.raises(ConfigError, match="SYMBIOTE_SHARE_PATH"):
        Settings.from_env({"SYMBIOTE_SHARE": "local"})
    with pytest.raises(ConfigError, match="must be one of"):
        Settings.from_env({"SYMBIOTE_SHARE": "nfs"})
    secret = "AccountKey=very-secret-key"
    ok = Settings.from_env(
        {"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SHARE_CONNECTION_STRING": secret, "SYMBIOTE_SHARE_NAME": "s"}
    )
    assert ok.share_connection_string == secret and "very-secret-key" not in repr(ok)
    assert Settings.from_env({}).share == "" and open_share(Settings.from_env({})) is None


# -- the local directory -------------------------------------------------------------------------


def test_local_lease_is_exclusive_renewable_and_releasable(tmp_path):
    clock = Clock()
    share = LocalDirectoryShare(tmp_path, clock=clock)
    first = share.acquire_lease("alpha", ttl=30)
    with pytest.raises(LeaseHeldError) as held:
        share.acquire_lease("beta", ttl=30)
    assert held.value.lease.holder == "alpha"
    clock.now += 20
    renewed = share.renew_lease(first)
    assert renewed.renewed_at == clock.now and share.current_lease().renewed_at == clock.now
    clock.now += 20  # 20 s after the renewal: still live
    with pytest.raises(LeaseHeldError):
        share.acquire_lease("beta", ttl=30)
    share.release_lease(renewed)
    assert share.current_lease() is None
    second = share.acquire_lease("beta", ttl=30)
    assert second.holder == "beta"
    with pytest.raises(LeaseLostError):
        share.renew_lease(renewed)  # alpha's old lease is not beta's


def test_local_stale_lease_is_taken_over(tmp_path):
    clock = Clock()
    share = LocalDirectoryShare(tmp_path, clock=clock)
    crashed = share.acquire_lease("crashed", ttl=30)
    clock.now += 31
    taker = share.acquire_lease("taker", ttl=30)
    assert taker.holder == "taker" and share.current_lease().lease_id == taker.lease_id
    with pytest.raises(LeaseLostError):
        share.renew_lease(crashed)  # the crashed holder, back from the dead, learns it lost
    assert not list((tmp_path / ".symbiote").glob("*.stale"))


HOLDER_SCRIPT = """
import sys, time
from pathlib import Path
from symbiote.azure.local_share import LocalDirectoryShare
LocalDirectoryShare(Path(sys.argv[1])).acquire_lease("victim", ttl=1.0)
print("held", flush=True)
time.sleep(600)
"""

CONTENDER_SCRIPT = """
import os, sys, time
from pathlib import Path
from symbiote.azure.local_share import LocalDirectoryShare
from symbiote.azure.share import LeaseHeldError
share = LocalDirectoryShare(Path(sys.argv[1]))
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
try:
    share.acquire_lease(f"p{os.getpid()}", ttl=30)
    print("won")
except LeaseHeldError:
    print("lost")
"""


def _python(script: str, *args: str, **kwargs: Any) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], cwd=ROOT, text=True, stdout=subprocess.PIPE, **kwargs
    )


def test_local_lease_of_a_killed_process_is_recovered(tmp_path):
    victim = _python(HOLDER_SCRIPT, str(tmp_path))
    try:
        assert victim.stdout.readline().strip() == "held"
        share = LocalDirectoryShare(tmp_path)
        with pytest.raises(LeaseHeldError):
            share.acquire_lease("survivor", ttl=1.0)
        victim.send_signal(signal.SIGKILL)  # a crash: no release, no cleanup
        victim.wait(10)
        time.sleep(1.2)  # the victim never renews again: its lease goes stale after its ttl
        assert share.acquire_lease("survivor", ttl=1.0).holder == "survivor"
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait(10)
        victim.stdout.close()


def test_local_lease_race_has_exactly_one_winner(tmp_path):
    go = tmp_path / "go"
    procs = [_python(CONTENDER_SCRIPT, str(tmp_path / "share"), str(go)) for _ in range(6)]
    time.sleep(1.5)  # let them all import and wait at the line
    go.touch()
    outcomes = sorted(proc.communicate(timeout=60)[0].strip() for proc in procs)
    assert outcomes == ["lost"] * 5 + ["won"]


def test_local_snapshot_is_a_point_in_time_copy_and_prunes(tmp_path):
    share = LocalDirectoryShare(tmp_path / "share")
    data = tmp_path / "share" / "chroma"
    data.mkdir(parents=True)
    (data / "chroma.sqlite3").write_bytes(b"v1")
    share.acquire_lease("me", ttl=30)
    first = share.create_snapshot()
    (data / "chroma.sqlite3").write_bytes(b"v2-changed")
    copy = share.snapshot_path(first)
    assert (copy / "chroma" / "chroma.sqlite3").read_bytes() == b"v1"
    assert not (copy / ".symbiote").exists() and not (copy / ".snapshots").exists()
    more = [share.create_snapshot() for _ in range(4)]
    listed = share.list_snapshots()
    assert [s.snapshot_id for s in listed] == [first.snapshot_id] + [s.snapshot_id for s in more]
    deleted = prune_snapshots(share, keep=2)
    assert [s.snapshot_id for s in deleted] == [first.snapshot_id] + [s.snapshot_id for s in more[:2]]
    assert [s.snapshot_id for s in share.list_snapshots()] == [s.snapshot_id for s in more[2:]]
    with pytest.raises(Exception):  # noqa: B017  (the fake refuses a path outside the share as the SDK does)
        share.delete_snapshot(Snapshot("../chroma", datetime.now(UTC)))
    assert data.exists()


def test_a_half_written_lock_file_is_a_lease_until_it_is_stale(tmp_path):
    # a crash while the lock file was written leaves text no one can read: judged by its age
    share = LocalDirectoryShare(tmp_path)
    lock = tmp_path / ".symbiote" / "writer.lock"
    lock.parent.mkdir()
    lock.write_text('{"holder": "cra')
    with pytest.raises(LeaseHeldError) as held:
        share.acquire_lease("next", ttl=30)
    assert held.value.lease.holder == "unknown"
    old = time.time() - 120
    os.utime(lock, (old, old))
    assert share.acquire_lease("next", ttl=30).holder == "next" and share.current_lease().holder == "next"


def test_a_folder_among_the_snapshots_that_is_not_one_is_left_alone(tmp_path):
    share = LocalDirectoryShare(tmp_path / "share")
    (tmp_path / "share" / "chroma").mkdir(parents=True)
    made = share.create_snapshot()
    (tmp_path / "share" / ".snapshots" / "kept-by-the-operator").mkdir()
    assert [s.snapshot_id for s in share.list_snapshots()] == [made.snapshot_id]
    share.delete_snapshot(made)
    assert share.list_snapshots() == [] and (tmp_path / "share" / ".snapshots" / "kept-by-the-operator").is_dir()


def test_local_usage_counts_data_not_snapshots_and_warns_at_90_percent(tmp_path):
    root = tmp_path / "share"
    (root / "chroma").mkdir(parents=True)
    (root / "chroma" / "blob").write_bytes(b"x" * 900)
    share = LocalDirectoryShare(root, quota_bytes=1000)
    share.create_snapshot()
    usage = share.usage()
    assert usage.used_bytes == 900 and usage.percent == 90.0
    assert "90% full" in usage.warning
    assert LocalDirectoryShare(root, quota_bytes=2000).usage().warning is None
    unbounded = LocalDirectoryShare(root).usage()
    assert unbounded.quota_bytes > unbounded.used_bytes  # the disk's free space stands in for a quota
    assert ShareUsage(5 * 1024**2, 2 * 1024**3).report() == {
        "used_mb": 5.0,
        "quota_mb": 2048.0,
        "percent_used": 0.2,
        "warning": None,
    }


# -- the lease keeper, the write gate, the guarded store -------------------------------------------


def test_writer_lease_standby_takes_over_when_the_writer_leaves(tmp_path):
    writer = WriterLease(LocalDirectoryShare(tmp_path), ttl=30, holder="writer").start()
    standby = WriterLease(LocalDirectoryShare(tmp_path), ttl=30, holder="standby").start()
    try:
        assert writer.held and not standby.held
        assert standby.status()["state"] == "standby" and standby.status()["writer"]["holder"] == "writer"
        with pytest.raises(WriterLeaseError, match="another instance \\(writer"):
            standby.check_writable()
        writer.stop(release=True)
        assert standby.attempt() is True and standby.generation == 1
        standby.check_writable()
        assert standby.status()["state"] == "writer"
    finally:
        writer.stop()
        standby.stop()


def test_writer_lease_loss_refuses_writes(tmp_path):
    clock = Clock()
    lease = WriterLease(LocalDirectoryShare(tmp_path, clock=clock), ttl=30, holder="me", clock=clock)
    assert lease.attempt()
    clock.now += 31  # we could not renew for a whole ttl (say the share was unreachable) ...
    other = LocalDirectoryShare(tmp_path, clock=clock).acquire_lease("other", ttl=30)  # ... and someone took over
    assert other.holder == "other"
    assert not lease.held
    assert lease.attempt() is False  # the renewal finds the lease gone
    with pytest.raises(WriterLeaseError, match="read-only"):
        lease.check_writable()


def test_renewal_failures_end_writing_before_others_may_take_over(tmp_path):
    clock = Clock()

    class Flaky(LocalDirectoryShare):
        down = False

        def renew_lease(self, lease: LeaseRecord) -> LeaseRecord:
            if self.down:
                raise OSError("share unreachable")
            return super().renew_lease(lease)

    share = Flaky(tmp_path, clock=clock)
    lease = WriterLease(share, ttl=30, holder="me", clock=clock)
    assert lease.attempt()
    share.down = True
    clock.now += 20
    assert lease.attempt() is True  # a failed renewal alone is not a loss ...
    clock.now += 5
    assert not lease.held  # ... but 25 s (> 80 % of 30) without one is: stop writing before anyone may break in
    assert "renewing the lease failed" in lease.refusal()


def test_write_gate_quiesce_waits_for_writes_and_holds_new_ones():
    gate = WriteGate()
    events: list[str] = []
    in_write, release = threading.Event(), threading.Event()

    def slow_write() -> None:
        with gate.write():
            in_write.set()
            release.wait(5)
            events.append("write-1 done")

    def later_write() -> None:
        with gate.write():
            events.append("write-2")

    first = threading.Thread(target=slow_write)
    first.start()
    assert in_write.wait(5)

    def snapshot() -> None:
        with gate.quiesce(timeout=5):
            events.append("snapshot")
            time.sleep(0.2)

    snap = threading.Thread(target=snapshot)
    snap.start()
    time.sleep(0.1)
    second = threading.Thread(target=later_write)
    second.start()
    time.sleep(0.1)
    assert events == []  # the snapshot waits for write-1; write-2 waits for the snapshot
    release.set()
    for thread in (first, snap, second):
        thread.join(5)
    assert events == ["write-1 done", "snapshot", "write-2"]
    with gate.write():
        with pytest.raises(TimeoutError):
            with gate.quiesce(timeout=0.1):
                pass


def _memory(text: str) -> tuple[StoredMemory, np.ndarray, list[str]]:
    stamp = int(time.time() * 1e6)
    vector = np.random.default_rng(len(text)).normal(size=(1, 384)).astype(np.float32)
    vector /= np.linalg.norm(vector)
    return (
        StoredMemory(f"mem_{stamp}{uuid.uuid4().int % 10000:04d}", text, "2025-01-01T00:00:00Z", stamp, ()),
        vector,
        [text],
    )


def test_guarded_store_refuses_writes_on_standby_and_reopens_after_takeover(tmp_path):
    root = tmp_path / "share"
    data = root / "chroma"
    writer = WriterLease(LocalDirectoryShare(root), ttl=30, holder="writer")
    standby = WriterLease(LocalDirectoryShare(root), ttl=30, holder="standby")
    assert standby.attempt() is True and writer.attempt() is False  # "writer" starts second: it is the standby
    opened: list[str] = []

    def opener(name: str):
        def open_() -> Any:
            opened.append(name)
            return Local(open_embedded_store(data, "all-MiniLM-L6-v2", 384))

        return open_

    with pytest.raises(StoreUnavailableError, match="not been created yet"):
        LeaseGuard(opener("late"), writer, WriteGate(), data)  # a standby never creates the store
    active = LeaseGuard(opener("active"), standby, WriteGate(), data)
    late = LeaseGuard(opener("late"), writer, WriteGate(), data)
    try:
        active.call(MemoryStore.add, *_memory("First memory, by the lease holder."))
        assert late.call(MemoryStore.count) == 1  # reads work on standby
        with pytest.raises(WriterLeaseError):
            late.call(MemoryStore.add, *_memory("Refused."))
        standby.stop(release=True)
        assert writer.attempt() is True
        late.call(MemoryStore.add, *_memory("Second memory, after the takeover."))
        assert opened == ["active", "late", "late"]  # reopened once, on taking over
        assert late.call(MemoryStore.count) == 2 and late.call(MemoryStore.size_bytes) > 0
        writer.stop()
    finally:
        active.close()
        late.close()


async def test_memory_stats_report_the_share_usage_the_runtime_hands_the_engine(tmp_path, model_dir):
    from symbiote.embedding.embedder import AsyncEmbedder
    from symbiote.memory import MemoryEngine

    embedder = AsyncEmbedder(shared_model)
    engines = [
        MemoryEngine(
            embedder, lambda model, dimension: Local(open_embedded_store(tmp_path / "plain", model, dimension))
        ),
        MemoryEngine(
            embedder,
            lambda model, dimension: Local(open_embedded_store(tmp_path / "reporting", model, dimension)),
            share_usage=lambda: ShareUsage(95, 100).report(),
        ),
    ]
    try:
        assert (await engines[0].stats()).share is None  # no usage source given
        reported = (await engines[1].stats()).share
        assert reported["percent_used"] == 95.0 and "95% full" in reported["warning"]
    finally:
        for engine in engines:  # each closes its store (the shared embedder twice: the second does nothing)
            engine.close()
    root = tmp_path / "share"
    settings = Settings(chromadb_path=root / "chroma", model_dir=model_dir, store_process=False)
    runtime = make_runtime(settings, share=LocalDirectoryShare(root, quota_bytes=1024**3))
    try:
        assert runtime.share is not None and runtime.share.lease.held
        stats = await runtime.engine.stats()
        assert stats.share["kind"] == "local" and stats.share["quota_mb"] == 1024.0
    finally:
        runtime.close()
    assert LocalDirectoryShare(root).current_lease() is None  # closing the runtime released the lease


def test_snapshot_job_skips_on_standby_and_catches_up(tmp_path):
    share = LocalDirectoryShare(tmp_path)
    holder = WriterLease(share, ttl=30, holder="holder")
    other = WriterLease(LocalDirectoryShare(tmp_path), ttl=30, holder="other")
    assert holder.attempt() and not other.attempt()
    assert SnapshotJob(share, other, WriteGate(), keep=3).run()["status"] == "skipped"
    job = SnapshotJob(share, holder, WriteGate(), keep=3)
    first = job.catch_up()
    assert first is not None and first["status"] == "ok" and first["reason"] == "catch-up"
    assert job.catch_up() is None  # the newest is recent
    assert job.catch_up(max_age=timedelta(0))["status"] == "ok"
    for _ in range(3):
        job.run()
    assert len(share.list_snapshots()) == 3


# -- Azure Files, through the SDK, against a stand-in service ---------------------------------------

ACCOUNT = "symbiotestore"
SHARE = "symbiote-data"
SUB, RG = "00000000-0000-0000-0000-000000000001", "rg-symbiote"
RESOURCE_ID = (
    f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}"
    f"/fileServices/default/shares/{SHARE}"
)
KEY = "a2V5LWZvci10ZXN0cy1vbmx5LWtleS1mb3ItdGVzdHMtb25seQ=="


class FakeAzureFiles(requests.adapters.BaseAdapter):
    """Just enough of the Azure Files REST API and of Microsoft.Storage to answer the SDK."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[requests.PreparedRequest] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.dirs: set[str] = set()
        self.snapshots: list[str] = []
        self.quota_gib = 2
        self.used_bytes = 123_456_789
        self.page_size: int | None = None  # the control plane's list in pages of this many (None: one page)
        self._tick = 0

    # plumbing

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self.requests.append(request)
        url = urlparse(request.url)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        headers = CaseInsensitiveDict(request.headers)
        if url.hostname == "management.azure.com":
            status, out_headers, body = self.arm(request.method, unquote(url.path), query, headers, request.body)
        else:
            status, out_headers, body = self.files_api(request.method, unquote(url.path), query, headers)
        response = requests.Response()
        response.status_code = status
        response.reason = {
            200: "OK",
            201: "Created",
            202: "Accepted",
            404: "Not Found",
            409: "Conflict",
            412: "Precondition Failed",
        }.get(status, "X")
        response.headers = CaseInsensitiveDict(
            {"x-ms-request-id": str(uuid.uuid4()), "x-ms-version": "2025-05-05", **out_headers}
        )
        data = body.encode() if isinstance(body, str) else (body or b"")
        response.headers.setdefault("Content-Length", str(len(data)))
        response._content = data
        response._content_consumed = True
        response.raw = io.BytesIO(data)
        response.url = request.url
        response.request = request
        return response

    def close(self) -> None:
        pass

    def _now(self) -> str:
        self._tick += 1
        return formatdate(1_700_000_000 + self._tick, usegmt=True)

    @staticmethod
    def error(status: int, code: str) -> tuple[int, dict[str, str], str]:
        body = f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code><Message>{code}</Message></Error>'
        return status, {"x-ms-error-code": code, "Content-Type": "application/xml"}, body

    # data plane

    def files_api(self, method: str, path: str, q: dict[str, str], h: Any) -> tuple[int, dict[str, str], Any]:
        share_path = f"/{SHARE}"
        if path in ("/", "") and q.get("comp") == "list":
            entries = "".join(
                f"<Share><Name>{SHARE}</Name><Snapshot>{s}</Snapshot><Properties><Last-Modified>{self._now()}"
                f'</Last-Modified><Etag>"0x1"</Etag><Quota>{self.quota_gib}</Quota></Properties></Share>'
                for s in self.snapshots
            )
            entries = (
                f'<Share><Name>{SHARE}</Name><Properties><Last-Modified>{self._now()}</Last-Modified><Etag>"0x1"</Etag><Quota>{self.quota_gib}</Quota></Properties></Share>'
                + entries
            )
            body = (
                f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="https://{ACCOUNT}.file.core.windows.net/">'
                f"<Prefix>{q.get('prefix', '')}</Prefix><Shares>{entries}</Shares><NextMarker /></EnumerationResults>"
            )
            return 200, {"Content-Type": "application/xml"}, body
        if path == share_path and q.get("restype") == "share":
            if q.get("comp") == "snapshot" and method == "PUT":
                stamp = (
                    datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=len(self.snapshots) + self._tick)
                ).strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
                self._tick += 1
                self.snapshots.append(stamp)
                return 201, {"x-ms-snapshot": stamp, "ETag": '"0x2"', "Last-Modified": self._now()}, b""
            if q.get("comp") == "stats":
                body = f'<?xml version="1.0" encoding="utf-8"?><ShareStats><ShareUsageBytes>{self.used_bytes}</ShareUsageBytes></ShareStats>'
                return 200, {"Content-Type": "application/xml"}, body
            if method == "DELETE" and q.get("sharesnapshot"):
                if q["sharesnapshot"] not in self.snapshots:
                    return self.error(404, "ShareNotFound")
                self.snapshots.remove(q["sharesnapshot"])
                return 202, {}, b""
            if method == "GET" and not q.get("comp"):
                return (
                    200,
                    {"x-ms-share-quota": str(self.quota_gib), "ETag": '"0x1"', "Last-Modified": self._now()},
                    b"",
                )
        rel = path[len(share_path) + 1 :] if path.startswith(share_path + "/") else None
        if rel is None:
            return self.error(400, "UnsupportedTestRequest")
        if q.get("restype") == "directory" and method == "PUT":
            if rel in self.dirs:
                return self.error(409, "ResourceAlreadyExists")
            self.dirs.add(rel)
            return 201, {"ETag": '"0x3"', "Last-Modified": self._now()}, b""
        entry = self.files.get(rel)
        lease_header = h.get("x-ms-lease-id")
        if method == "HEAD":
            if entry is None:
                return 404, {"x-ms-error-code": "ResourceNotFound"}, b""
            out = {
                "x-ms-type": "File",
                "Content-Length": "0",
                "ETag": '"0x4"',
                "Last-Modified": entry["modified"],
                "x-ms-lease-state": "leased" if entry["lease"] else "available",
                "x-ms-lease-status": "locked" if entry["lease"] else "unlocked",
            }
            if entry["lease"]:
                out["x-ms-lease-duration"] = "infinite"
            out.update({f"x-ms-meta-{k}": v for k, v in entry["meta"].items()})
            return 200, out, b""
        if method == "PUT" and q.get("comp") == "lease":
            if entry is None:
                return self.error(404, "ResourceNotFound")
            action = h.get("x-ms-lease-action")
            if action == "acquire":
                if entry["lease"]:
                    return self.error(409, "LeaseAlreadyPresent")
                entry["lease"] = h.get("x-ms-proposed-lease-id") or str(uuid.uuid4())
                return 201, {"x-ms-lease-id": entry["lease"], "ETag": '"0x5"', "Last-Modified": self._now()}, b""
            if action == "release":
                if entry["lease"] != lease_header:
                    return self.error(409, "LeaseIdMismatchWithLeaseOperation")
                entry["lease"] = None
                return 200, {"ETag": '"0x5"', "Last-Modified": self._now()}, b""
            if action == "break":
                entry["lease"] = None
                return 202, {"x-ms-lease-time": "0", "ETag": '"0x5"', "Last-Modified": self._now()}, b""
            return self.error(400, "UnsupportedLeaseAction")
        if method == "PUT" and q.get("comp") == "metadata":
            if entry is None:
                return self.error(404, "ResourceNotFound")
            if entry["lease"] and lease_header != entry["lease"]:
                return self.error(412, "LeaseIdMismatchWithFileOperation" if lease_header else "LeaseIdMissing")
            entry["meta"] = {k[len("x-ms-meta-") :]: v for k, v in h.items() if k.lower().startswith("x-ms-meta-")}
            entry["modified"] = self._now()
            return 200, {"ETag": '"0x6"', "Last-Modified": entry["modified"]}, b""
        if method == "PUT" and h.get("x-ms-type", "").lower() == "file":
            if entry is not None and entry["lease"] and lease_header != entry["lease"]:
                return self.error(412, "LeaseIdMissing")
            self.files[rel] = {"lease": None, "meta": {}, "modified": self._now()}
            return 201, {"ETag": '"0x7"', "Last-Modified": self._now()}, b""
        return self.error(400, "UnsupportedTestRequest")

    # control plane

    def arm(self, method: str, path: str, q: dict[str, str], h: Any, body: Any) -> tuple[int, dict[str, str], Any]:
        assert q.get("api-version"), "ARM calls carry an api-version"
        share_path = RESOURCE_ID
        json_type = {"Content-Type": "application/json"}
        if path == share_path and method == "PUT" and q.get("$expand") == "snapshots":
            assert json.loads(body)["properties"]["metadata"] == {"createdby": "symbiote"}
            stamp = (datetime(2025, 6, 1, tzinfo=UTC) + timedelta(hours=len(self.snapshots) + self._tick)).strftime(
                "%Y-%m-%dT%H:%M:%S.0000000Z"
            )
            self._tick += 1
            self.snapshots.append(stamp)
            return 201, json_type, json.dumps({"name": SHARE, "properties": {"snapshotTime": stamp}})
        if path == share_path.rsplit("/", 1)[0] and method == "GET":
            assert q.get("$expand") == "snapshots"
            items = [{"name": SHARE, "properties": {"shareQuota": self.quota_gib}}]
            items += [{"name": SHARE, "properties": {"snapshotTime": s}} for s in self.snapshots]
            items += [{"name": SHARE + "-other", "properties": {"snapshotTime": "2020-01-01T00:00:00.0000000Z"}}]
            if self.page_size is None:
                return 200, json_type, json.dumps({"value": items})
            start = int(q.get("$skiptoken", "0"))  # ARM pages a long list, each page naming the next
            page: dict[str, Any] = {"value": items[start : start + self.page_size]}
            if start + self.page_size < len(items):
                page["nextLink"] = (
                    f"https://management.azure.com{path}?api-version={q['api-version']}"
                    f"&$expand=snapshots&$skiptoken={start + self.page_size}"
                )
            return 200, json_type, json.dumps(page)
        if path == share_path and method == "DELETE":
            stamp = h.get("x-ms-snapshot")
            if stamp not in self.snapshots:
                return 404, json_type, json.dumps({"error": {"code": "ShareNotFound"}})
            self.snapshots.remove(stamp)
            return 200, {}, b""
        if path == share_path and method == "GET" and q.get("$expand") == "stats":
            return (
                200,
                json_type,
                json.dumps(
                    {"name": SHARE, "properties": {"shareQuota": self.quota_gib, "shareUsageBytes": self.used_bytes}}
                ),
            )
        return 400, json_type, json.dumps({"error": {"code": "UnsupportedTestRequest"}})


class StaticToken:
    """A token credential standing in for the managed identity (no Entra ID here)."""

    def __init__(self) -> None:
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(f"token-for-{scopes[0]}", int(time.time()) + 3600)


def azure_share(
    service: FakeAzureFiles, *, identity: bool, clock: Clock | None = None
) -> tuple[AzureFileShare, StaticToken]:
    session = requests.Session()
    session.mount("https://", service)
    transport = RequestsTransport(session=session, session_owner=False)
    token = StaticToken()
    if identity:
        settings = Settings.from_env({"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SHARE_RESOURCE_ID": RESOURCE_ID})
    else:
        conn = f"DefaultEndpointsProtocol=https;AccountName={ACCOUNT};AccountKey={KEY};EndpointSuffix=core.windows.net"
        settings = Settings.from_env(
            {"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SHARE_CONNECTION_STRING": conn, "SYMBIOTE_SHARE_NAME": SHARE}
        )
    share = open_share(settings, credential=token, transport=transport)
    if clock is not None:
        share._clock = clock
    return share, token


@pytest.mark.parametrize("identity", [True, False], ids=["managed-identity", "connection-string"])
def test_azure_lease_lifecycle_through_the_sdk(identity):
    service = FakeAzureFiles()
    clock = Clock()
    share, token = azure_share(service, identity=identity, clock=clock)
    first = share.acquire_lease("replica-a", ttl=60)
    assert service.files[".symbiote/writer.lock"]["lease"] == first.lease_id
    assert service.files[".symbiote/writer.lock"]["meta"]["holder"] == "replica-a"
    assert share.current_lease().holder == "replica-a"

    other, _ = azure_share(service, identity=identity, clock=clock)
    with pytest.raises(LeaseHeldError) as held:
        other.acquire_lease("replica-b", ttl=60)
    assert held.value.lease.holder == "replica-a"

    clock.now += 30
    renewed = share.renew_lease(first)
    assert float(service.files[".symbiote/writer.lock"]["meta"]["renewedat"]) == clock.now

    clock.now += 61  # replica-a crashed: no renewal for longer than the ttl
    taken = other.acquire_lease("replica-b", ttl=60)
    assert service.files[".symbiote/writer.lock"]["lease"] == taken.lease_id
    with pytest.raises(LeaseLostError):
        share.renew_lease(renewed)
    other.release_lease(taken)
    assert service.files[".symbiote/writer.lock"]["lease"] is None and share.current_lease() is None

    actions = [r.headers.get("x-ms-lease-action") for r in service.requests if "comp=lease" in r.url]
    assert actions == ["acquire", "acquire", "acquire", "break", "acquire", "release"]
    data_plane = [r for r in service.requests if r.url.startswith(f"https://{ACCOUNT}.file.core.windows.net")]
    if identity:
        assert all(
            r.headers["Authorization"] == "Bearer token-for-https://storage.azure.com/.default" for r in data_plane
        )
        assert all(r.headers.get("x-ms-file-request-intent") == "backup" for r in data_plane)
    else:
        assert all(r.headers["Authorization"].startswith(f"SharedKey {ACCOUNT}:") for r in data_plane)


@pytest.mark.parametrize("identity", [True, False], ids=["managed-identity", "connection-string"])
def test_azure_snapshots_prune_and_usage_through_the_sdk(identity):
    service = FakeAzureFiles()
    share, token = azure_share(service, identity=identity)
    made = [share.create_snapshot() for _ in range(5)]
    assert [s.snapshot_id for s in share.list_snapshots()] == [s.snapshot_id for s in made]
    assert made[0].created_at.tzinfo is not None
    deleted = prune_snapshots(share, keep=3)
    assert [s.snapshot_id for s in deleted] == [s.snapshot_id for s in made[:2]]
    assert service.snapshots == [s.snapshot_id for s in made[2:]]
    usage = share.usage()
    assert usage.used_bytes == 123_456_789 and usage.quota_bytes == 2 * 1024**3 and usage.warning is None
    service.used_bytes = int(1.9 * 1024**3)
    assert "95% full" in share.usage().warning
    control = [r for r in service.requests if r.url.startswith("https://management.azure.com")]
    if identity:  # share-level calls need the control plane: data-plane OAuth covers files only
        assert control and all(
            r.headers["Authorization"] == "Bearer token-for-https://management.azure.com/.default" for r in control
        )
        assert any(r.method == "DELETE" and r.headers.get("x-ms-snapshot") for r in control)
    else:
        assert control == []
        assert any("comp=snapshot" in r.url for r in service.requests)


def test_azure_lock_file_leased_but_never_described_is_judged_by_its_last_change():
    # an instance that took the lease and died before writing who it is
    service = FakeAzureFiles()
    clock = Clock()
    share, _ = azure_share(service, identity=True, clock=clock)
    assert share.current_lease() is None  # no lock file yet
    service.dirs.add(".symbiote")
    service.files[".symbiote/writer.lock"] = {
        "lease": "ghost",
        "meta": {},
        "modified": formatdate(clock.now - 30, usegmt=True),
    }
    found = share.current_lease()
    assert (found.holder, found.renewed_at) == ("unknown", clock.now - 30)
    with pytest.raises(LeaseHeldError):
        share.acquire_lease("replica-a", ttl=60)
    clock.now += 31  # 61 s since its last change: stale
    taken = share.acquire_lease("replica-a", ttl=60)
    assert service.files[".symbiote/writer.lock"]["lease"] == taken.lease_id


def test_azure_release_of_a_lease_another_took_leaves_theirs():
    service = FakeAzureFiles()
    clock = Clock()
    share, _ = azure_share(service, identity=False, clock=clock)
    service.dirs.add(".symbiote")  # made by an instance that died before it made the lock file
    old = share.acquire_lease("replica-a", ttl=60)
    clock.now += 61
    other, _ = azure_share(service, identity=False, clock=clock)
    taken = other.acquire_lease("replica-b", ttl=60)
    share.release_lease(old)  # replica-a, back, lets go of what it no longer holds: nothing happens
    assert service.files[".symbiote/writer.lock"]["lease"] == taken.lease_id
    assert other.current_lease().holder == "replica-b"


def test_azure_snapshots_listed_over_several_pages_and_a_failed_call_said():
    service = FakeAzureFiles()
    service.page_size = 2
    share, _ = azure_share(service, identity=True)
    made = [share.create_snapshot() for _ in range(5)]
    assert [s.snapshot_id for s in share.list_snapshots()] == [s.snapshot_id for s in made]
    share.delete_snapshot(made[0])
    with pytest.raises(HttpResponseError, match="ShareNotFound"):
        share.delete_snapshot(made[0])  # gone already: the control plane's answer, said
    assert service.snapshots == [s.snapshot_id for s in made[1:]]


def test_a_resource_id_that_names_no_storage_account_is_refused_in_words():
    settings = Settings.from_env(
        {"SYMBIOTE_SHARE": "azure", "SYMBIOTE_SHARE_RESOURCE_ID": "/subscriptions/s/fileServices/default/shares/x"}
    )
    with pytest.raises(FileShareError, match="not a file share resource id: '/subscriptions/s/fileServices"):
        open_share(settings, credential=StaticToken())


def test_azure_share_with_the_real_default_credential_is_configured_for_the_identity():
    from azure.identity import DefaultAzureCredential

    settings = Settings.from_env(
        {
            "SYMBIOTE_SHARE": "azure",
            "SYMBIOTE_SHARE_RESOURCE_ID": RESOURCE_ID,
            "AZURE_CLIENT_ID": "11111111-2222-3333-4444-555555555555",
        }
    )
    share = open_share(settings)
    assert isinstance(share, AzureFileShare)
    assert share.location == f"https://{ACCOUNT}.file.core.windows.net/{SHARE}"
    assert isinstance(share._share.credential, DefaultAzureCredential)
    assert share._file.file_request_intent == "backup"


def test_periodic_snapshots_without_the_functions_timer(tmp_path):
    from symbiote.azure.services import open_share_services

    settings = Settings.from_env(
        {"SYMBIOTE_SHARE": "local", "SYMBIOTE_SHARE_PATH": str(tmp_path), "SYMBIOTE_SNAPSHOT_KEEP": "2"}
    )
    services = open_share_services(settings, catch_up=False)
    try:
        assert services.lease.held and services.share.list_snapshots() == []
        services.start_periodic_snapshots(interval_s=0.05, max_age=timedelta(0))
        deadline = time.monotonic() + 10
        while len(services.share.list_snapshots()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # a few more rounds: each takes one and prunes back
    finally:
        services.close()  # waits for a round in progress, so its prune has happened
    assert len(services.share.list_snapshots()) == 2  # taken when due, pruned to SYMBIOTE_SNAPSHOT_KEEP
    assert services.share.current_lease() is None  # closing releases the lease


def test_guarded_store_delegates_reads_and_guards_every_write(tmp_path):
    class Inner:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def count(self) -> int:
            self.calls.append("count")
            return 1

        def delete(self, memory_id: str) -> bool:
            self.calls.append("delete")
            return True

        def close(self) -> None:  # reopened after this instance takes over as the writer
            self.calls.append("close")

    inner = Inner()
    root = tmp_path / "share"
    holder = WriterLease(LocalDirectoryShare(root), ttl=30, holder="holder")
    standby = WriterLease(LocalDirectoryShare(root), ttl=30, holder="standby")
    assert holder.attempt() and not standby.attempt()
    (root / "chroma").mkdir(parents=True)
    (root / "chroma" / "chroma.sqlite3").write_bytes(b"")
    gate = WriteGate()
    guarded = LeaseGuard(lambda: Local(inner), standby, gate, root / "chroma")
    assert guarded.call(MemoryStore.count) == 1  # reads need no lease
    with pytest.raises(WriterLeaseError):  # a write needs the lease
        guarded.call(MemoryStore.delete, "mem_1")
    assert inner.calls == ["count"]
    holder.stop()
    assert standby.attempt()
    assert guarded.call(MemoryStore.delete, "mem_1") is True
    assert gate.writes_in_flight == 0
    assert inner.calls == ["count", "close", "delete"]  # reopened once after the takeover, then written
    standby.stop()
