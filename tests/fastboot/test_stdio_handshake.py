"""`symbiote stdio` answers the handshake while the MCP SDK loads (`symbiote.fastboot.stdio_relay`,
`symbiote.fastboot.stdio_handshake`).

The server is the real `symbiote stdio` child process on real pipes. A gate (a test-only import
hook given to the child through PYTHONPATH) holds back the import of `symbiote.runtime`, so
"answered before the SDK was loaded" is certain, not a matter of timing.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import queue
import shutil
import signal
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from symbiote.config import Settings
from symbiote.fastboot import handshake, stdio_handshake
from symbiote.fastboot.stdio_handshake import FORWARD, StdioHandshakeCache
from tests.fastboot.stdio_process import StdioProcess

pytestmark = pytest.mark.server("the process is the point: its start, its pipes and its signals over stdio")

CLIENT = {"name": "claude-ai", "version": "0.1.0"}


def initialize(request_id: int | str = 0, version: str = "2025-06-18", **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT, **params},
    }


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
OPENING = [
    initialize(),
    INITIALIZED,
    request(2, "prompts/list"),
    request(3, "resources/list", {}),
    request(4, "ping"),
    request(5, "resources/templates/list", {}),
    request(1, "tools/list", {}),  # never from the cache: listed once the tools can answer
]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`symbiote record-handshake` run once for the module (about 4 s a run): the data directory and
    the user cache it leaves, under one folder."""
    root = tmp_path_factory.mktemp("recording")
    env = {**StdioProcess(root / "data").env, "XDG_CACHE_HOME": str(root / "user-cache")}
    done = subprocess.run(
        [sys.executable, "-m", "symbiote", "record-handshake"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "stdio handshake answers" in done.stdout, done.stderr
    return root


@pytest.fixture
def recorded(tmp_path: Path, own_user_cache: Path, recording: Path) -> Path:
    """A data directory prepared as setup prepares it (`symbiote record-handshake`), and this test's
    user cache as setup leaves it: copies of the module's recording, which a test may change (its
    answers do not depend on where the data lives: `test_the_fingerprint_ignores_where_the_data_lives`)."""
    data = tmp_path / "data"
    shutil.copytree(recording / "data", data)
    shutil.copytree(recording / "user-cache", own_user_cache, dirs_exist_ok=True)
    return data


@dataclass(frozen=True)
class Uncached:
    """What a `symbiote stdio` with no cache anywhere did: its answers to the whole opening (the
    SDK's own), its environment, its exit code."""

    answered: dict[int | str, dict[str, Any]]
    env: dict[str, str]
    code: int


@pytest.fixture(scope="module")
def uncached(tmp_path_factory: pytest.TempPathFactory) -> Uncached:
    """One start without a cache (an empty data directory, an empty user cache), shared by the tests
    that look at what the SDK answers and what such a start records for the next one."""
    root = tmp_path_factory.mktemp("uncached")
    data = root / "data"
    server = StdioProcess(data, env={"XDG_CACHE_HOME": str(root / "user-cache")}).start()
    try:
        answered = server.ask(OPENING)
        deadline = time.monotonic() + 60
        while not (data / stdio_handshake.CACHE_FILE).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        code, _stderr = server.stop()
    return Uncached(answered, server.env, code)


def test_the_opening_is_answered_before_the_sdk_loads_and_equals_the_sdks_answers(
    tmp_path: Path, recorded: Path, uncached: Uncached
) -> None:
    gate = tmp_path / "gate"
    early = StdioProcess(recorded, gate).start()
    try:
        cached = early.ask(OPENING[:-1])
        assert not gate.exists(), "answered while the server's import was held back"
        assert all("result" in reply for reply in cached.values()), cached
        early.send(OPENING[-1])
        early.send(request(6, "tools/call", {"name": "search_memory", "arguments": {"query": "what are we building?"}}))
        with pytest.raises(queue.Empty):
            early.receive(timeout=0.5)  # the tools are listed, and called, by the server
        gate.touch()
        replies = [early.receive(), early.receive()]  # in either order: a JSON-RPC reply goes by its id
        listed, searched = sorted(replies, key=lambda reply: reply["id"])
        assert listed["id"] == 1 and listed["result"]["tools"], listed
        assert searched["id"] == 6 and "result" in searched and not searched["result"].get("isError"), searched
        assert early.ask([request(7, "ping")])[7]["result"] == {}, "the SDK serves the rest of the session"
        assert early.lines.empty(), "the SDK's own reply to the cached initialize is not sent again"
    finally:
        code, stderr = early.stop()
    assert code == 0, stderr
    assert {**cached, 1: listed} == uncached.answered  # no cache anywhere: the SDK answered all


def test_an_unusual_opening_goes_to_the_sdk_and_the_cache_stops_answering(tmp_path: Path, recorded: Path) -> None:
    gate = tmp_path / "gate"
    server = StdioProcess(recorded, gate).start()
    try:
        server.send(initialize(capabilities={"experimental": {"x": {}}}))  # not a shape the cache answers
        server.send(INITIALIZED)
        server.send(request(1, "tools/list"))
        with pytest.raises(queue.Empty):
            server.receive(timeout=1.0)
        gate.touch()
        replies = {reply["id"]: reply for reply in (server.receive(), server.receive())}
    finally:
        code, _stderr = server.stop()
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18" and "tools" in replies[1]["result"]
    assert code == 0


def test_a_cache_that_disagrees_with_the_sdk_is_dropped(tmp_path: Path, recorded: Path) -> None:
    path = recorded / stdio_handshake.CACHE_FILE
    raw = json.loads(path.read_text(encoding="utf-8"))
    key = "initialize|2025-06-18"
    reply = json.loads(raw["replies"][key])
    reply["result"]["serverInfo"]["version"] = "0.0.0-tampered"
    raw["replies"][key] = json.dumps(reply)
    path.write_text(json.dumps(raw), encoding="utf-8")
    server = StdioProcess(recorded).start()
    try:
        answered = server.ask([initialize(), INITIALIZED])
        assert answered[0]["result"]["serverInfo"]["version"] == "0.0.0-tampered", "the cache answered"
        assert server.ask([request(1, "tools/call", {"name": "memory_stats", "arguments": {}})])[1]["result"]
        deadline = time.monotonic() + 30
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.lines.empty(), "the SDK's duplicate initialize reply is still dropped"
    finally:
        code, stderr = server.stop()
    assert not path.exists(), "a cache the SDK disagreed with is not used again"
    assert StdioHandshakeCache.load(Settings.from_env(server.env)) is None, "nor its copy in the user cache"
    assert "differed from the SDK's" in stderr and code == 0


def spawn(server: StdioProcess) -> subprocess.Popen[bytes]:
    """The child with plain pipes, for tests that read (or close) its stdout themselves."""
    return subprocess.Popen(
        [sys.executable, "-m", "symbiote", "stdio"],
        env=server.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def wait_until_full(pipe: IO[bytes]) -> None:
    """Until answers fill over half the pipe and no more come for a second: the server has written
    what fits, and waits to write the rest (instead of a fixed 6 s for every request to be answered)."""
    capacity = fcntl.fcntl(pipe.fileno(), fcntl.F_GETPIPE_SZ)
    unread, seen, since = array.array("i", [0]), -1, time.monotonic()
    deadline = since + 60
    while unread[0] <= capacity // 2 or time.monotonic() - since < 1.0:
        assert time.monotonic() < deadline, f"{unread[0]} bytes of answers in a pipe of {capacity}"
        time.sleep(0.05)
        fcntl.ioctl(pipe.fileno(), termios.FIONREAD, unread)
        if unread[0] != seen:
            seen, since = unread[0], time.monotonic()


def cpu_ticks(pid: int) -> int | None:
    """The process's CPU time so far (user + system, in clock ticks), or None once it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return None if fields[0] == "Z" else int(fields[11]) + int(fields[12])


def wait_until_idle(proc: subprocess.Popen[bytes]) -> None:
    """Until the process has used no CPU for a second, or has exited: whatever it does about the end
    of its input is done (instead of a fixed 8 s for it to happen)."""
    seen, since = cpu_ticks(proc.pid), time.monotonic()
    deadline = since + 60
    while time.monotonic() - since < 1.0 and seen is not None:
        assert time.monotonic() < deadline, "the server kept working for a minute after its input ended"
        time.sleep(0.05)
        ticks = cpu_ticks(proc.pid)
        if ticks != seen:
            seen, since = ticks, time.monotonic()


def test_every_answer_reaches_a_client_that_reads_late(recorded: Path) -> None:
    """The client sends, waits, closes its end, and only then reads: the server waits for it, as
    the SDK alone did, instead of exiting with answers unwritten (about 90 KB, past the pipes' buffers)."""
    proc = spawn(StdioProcess(recorded))
    assert proc.stdin is not None and proc.stdout is not None
    lines = [initialize(), INITIALIZED, request(1, "tools/call", {"name": "memory_stats", "arguments": {}})]
    lines += [request(10 + i, "tools/list", {}) for i in range(3)] + [
        request(20 + i, "prompts/get", {"name": "venom_identity"}) for i in range(3)
    ]
    proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    proc.stdin.flush()
    wait_until_full(proc.stdout)  # the answers wait in the pipes, the rest in the server
    proc.stdin.close()
    wait_until_idle(proc)  # the input has ended, and the server has done what it does about it
    with proc.stdout:
        replies = [json.loads(line) for line in proc.stdout.read().splitlines()]
    assert proc.wait(timeout=30) == 0
    assert sorted(reply["id"] for reply in replies) == [0, 1, 10, 11, 12, 20, 21, 22]
    assert all("result" in reply for reply in replies)


def test_a_client_that_closes_our_stdout_ends_the_server(recorded: Path) -> None:
    """As with the SDK alone: the next answer cannot be written, so the server stops instead of
    going on with work nobody will hear about."""
    proc = spawn(StdioProcess(recorded))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(initialize()).encode() + b"\n" + json.dumps(INITIALIZED).encode() + b"\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdout.close()
    with contextlib.suppress(BrokenPipeError):
        for index in range(10):
            proc.stdin.write(
                json.dumps(request(100 + index, "tools/call", {"name": "memory_stats", "arguments": {}})).encode()
                + b"\n"
            )
        proc.stdin.flush()
    # The calls wait in the pipe while the server loads the SDK; it may write every answer before the
    # first meets the closed pipe. The wait is for the exit; its timeout only stops a server that hangs.
    assert proc.wait(timeout=180) == 1, "stopped on the broken pipe, as the SDK alone does"


def test_ctrl_c_ends_the_session_cleanly(recorded: Path) -> None:
    """Ctrl+C in a terminal running `symbiote stdio` ends the session as a closed stdin does."""
    server = StdioProcess(recorded).start()
    assert server.ask([initialize(), INITIALIZED, request(1, "tools/call", {"name": "memory_stats", "arguments": {}})])[
        1
    ]["result"]
    assert server.proc is not None
    server.proc.send_signal(signal.SIGINT)
    assert server.proc.wait(timeout=20) == 0


def test_a_new_data_directory_is_answered_from_the_user_cache(
    tmp_path: Path, recorded: Path, own_user_cache: Path
) -> None:
    assert list(own_user_cache.glob("symbiote/handshake-stdio-*.json")), "setup's recording is kept per user too"
    gate = tmp_path / "gate"
    elsewhere = tmp_path / "claude-desktop-data"  # a CHROMADB_PATH setup never saw
    server = StdioProcess(elsewhere, gate).start()
    try:
        opening = server.ask(OPENING[:3])
        assert not gate.exists() and "prompts" in opening[2]["result"], "answered before the server's import"
        gate.touch()
        assert server.ask([request(6, "tools/call", {"name": "memory_stats", "arguments": {}})])[6]["result"]
    finally:
        code, _stderr = server.stop()
    assert code == 0


def test_without_a_cache_the_server_records_one_for_the_next_start(uncached: Uncached) -> None:
    assert uncached.answered[1]["result"]["tools"]
    assert uncached.code == 0
    cache = StdioHandshakeCache.load(Settings.from_env(uncached.env))
    assert cache is not None, "recorded, and current for the same settings"
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert {f"initialize|{version}" for version in HANDSHAKE_PROTOCOL_VERSIONS} <= set(cache.replies)
    assert {f"prompts/list|{version}" for version in HANDSHAKE_PROTOCOL_VERSIONS} <= set(cache.replies)
    assert not any(key.startswith("tools/list|") for key in cache.replies)


def test_the_fingerprint_ignores_where_the_data_lives(settings: Settings) -> None:
    import dataclasses

    elsewhere = dataclasses.replace(settings, chromadb_path=Path("/somewhere/else"))
    assert handshake.fingerprint(settings) == handshake.fingerprint(elsewhere)
    assert handshake.fingerprint(settings) != handshake.fingerprint(
        dataclasses.replace(settings, personality="variant2")
    )
    assert handshake.fingerprint(settings) != handshake.fingerprint(stdio_handshake.stdio_settings(settings))


# The opening's rules, line by line, on a toy cache (what the real cache holds is tested above).
TOY = StdioHandshakeCache(
    "toy",
    {
        "initialize|2025-06-18": json.dumps(
            {"jsonrpc": "2.0", "id": handshake.PROBE_ID, "result": {"protocolVersion": "2025-06-18"}}
        ),
        "prompts/list|2025-06-18": json.dumps({"jsonrpc": "2.0", "id": handshake.PROBE_ID, "result": {"prompts": []}}),
    },
)


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


def test_initialize_is_answered_and_still_passed_on() -> None:
    opening = TOY.session()
    answer = opening.answer(line(initialize("abc")))
    assert answer.forward and answer.suppress_id == "abc"
    assert answer.reply is not None and json.loads(answer.reply)["id"] == "abc"
    assert opening.answer(line(INITIALIZED)) == stdio_handshake.PASS_ON and opening.open
    listed = opening.answer(line(request(9, "prompts/list")))
    assert not listed.forward and listed.reply is not None and json.loads(listed.reply)["id"] == 9


@pytest.mark.parametrize(
    "first",
    [
        line(request(1, "tools/list")),  # before initialize: the SDK refuses it
        line(initialize(version="1999-01-01")),  # a version not recorded
        line(initialize(True)),  # a boolean id
        line(initialize(1.5)),  # a float id
        line(initialize(capabilities={"sampling": {"context": {}}})),
        line(initialize(clientInfo={"name": "x"})),  # no version
        line(initialize(_meta={"x": 1})),
        json.dumps(initialize()).encode() + b"\r\n",  # the SDK reads newlines its own way
        json.dumps(initialize()).encode(),  # no newline: the end of input
        b"\xef\xbb\xbf" + line(initialize()),  # a byte-order mark
        line({**initialize(), "extra": 1}),
        b"not json\n",
        line([initialize()]),  # a batch
    ],
)
def test_anything_unusual_goes_to_the_sdk_and_so_does_everything_after_it(first: bytes) -> None:
    opening = TOY.session()
    assert opening.answer(first) == FORWARD
    assert opening.answer(line(initialize())) == FORWARD, "order is kept: the rest follows the SDK"


@pytest.mark.parametrize(
    "later",
    [
        line(request(2, "prompts/list", {"cursor": "x"})),  # a page the cache does not hold
        line(request(2, "tools/call", {"name": "memory_stats"})),
        line(request(2, "tools/list")),  # listed by the SDK once the tools can answer
        line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}}),
        line(request(2, "resources/list")),  # not recorded in the toy cache
    ],
)
def test_after_initialize_only_recorded_plain_requests_are_answered(later: bytes) -> None:
    opening = TOY.session()
    assert opening.answer(line(initialize())).reply is not None
    assert opening.answer(later) == FORWARD
    assert opening.answer(line(request(3, "prompts/list"))) == FORWARD
