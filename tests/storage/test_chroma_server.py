"""A Chroma server as the store: configuration, sharing between instances, failures, credentials,
and the docker-compose stack. Everything runs against a real `chroma run` on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import chromadb
import httpx
import pytest
import yaml
from chromadb.config import Settings as ChromaSettings
from mcp import Client

from symbiote.config import PROJECT_ROOT, ConfigError, Settings
from symbiote.embedding.model import MODEL_DIMENSION, MODEL_NAME, Embedder
from symbiote.errors import StoreUnavailableError
from symbiote.memory import StoreRequest, created_us
from symbiote.storage.base import SIDE_DATABASE_FILE, StoredMemory, content_hash
from symbiote.storage.chroma.client import ChromaServer, connect_server
from symbiote.storage.chroma.server_store import ServerMemoryStore
from symbiote.storage.chroma.side_database import SideDatabase
from tests.chroma_server import ChromaServerProcess, chroma_server  # noqa: F401  (fixture)
from tests.conftest import ServerProcess, free_port, make_runtime

COMPOSE = PROJECT_ROOT / "docker-compose.yml"


def database() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("", 8000, False)),
        ({"CHROMA_HOST": "chroma"}, ("chroma", 8000, False)),
        ({"CHROMA_HOST": "chroma", "CHROMA_PORT": "9000", "CHROMA_SSL": "true"}, ("chroma", 9000, True)),
        ({"CHROMA_HOST": "db.internal:8123"}, ("db.internal", 8123, False)),
        ({"CHROMA_HOST": "https://chroma.example.com"}, ("chroma.example.com", 8000, True)),
        ({"CHROMA_HOST": "http://10.0.0.5:8001/"}, ("10.0.0.5", 8001, False)),
    ],
)
def test_chroma_host_forms(env: dict[str, str], expected: tuple[str, int, bool]) -> None:
    settings = Settings.from_env(env)
    assert (settings.chroma_host, settings.chroma_port, settings.chroma_ssl) == expected
    assert (ChromaServer.from_settings(settings) is None) == (not env)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"CHROMA_PORT": "8000"}, "CHROMA_PORT is set but CHROMA_HOST is not"),
        ({"CHROMA_AUTH_TOKEN": "t"}, "CHROMA_AUTH_TOKEN is set but CHROMA_HOST is not"),
        ({"CHROMA_HOST": "ftp://chroma"}, "scheme must be http or https"),
        ({"CHROMA_HOST": "chroma:1", "CHROMA_PORT": "2"}, "name different ports"),
        ({"CHROMA_HOST": "https://chroma", "CHROMA_SSL": "no"}, "disagree about TLS"),
        ({"CHROMA_HOST": "chroma", "CHROMA_SSL": "maybe"}, "CHROMA_SSL='maybe'"),
        ({"CHROMA_HOST": "chroma", "CHROMA_PORT": "70000"}, "CHROMA_PORT=70000 is out of range"),
        ({"CHROMA_HOST": "chroma", "CHROMA_AUTH_HEADER": "Cookie"}, "CHROMA_AUTH_HEADER='Cookie'"),
        ({"CHROMA_HOST": "chroma", "SYMBIOTE_SHARE": "local", "SYMBIOTE_SHARE_PATH": "/x"}, "exclude each other"),
        ({"HISTORY_TAIL_N": "0", "MEMORY_TOP_K": "50", "CONTEXT_TOKEN_BUDGET": "10"}, "HISTORY_TAIL_N=0"),
    ],
)
def test_bad_chroma_settings_are_refused_with_the_reason(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        Settings.from_env(env)


def test_token_is_sent_as_configured_and_never_shown() -> None:
    bearer = ChromaServer.from_settings(Settings.from_env({"CHROMA_HOST": "c", "CHROMA_AUTH_TOKEN": "s3cret"}))
    header = ChromaServer.from_settings(
        Settings.from_env({"CHROMA_HOST": "c", "CHROMA_AUTH_TOKEN": "s3cret", "CHROMA_AUTH_HEADER": "x-chroma-token"})
    )
    assert bearer is not None and header is not None
    assert bearer.headers == {"Authorization": "Bearer s3cret"}
    assert header.headers == {"X-Chroma-Token": "s3cret"}
    settings = Settings.from_env({"CHROMA_HOST": "c", "CHROMA_AUTH_TOKEN": "s3cret"})
    assert "s3cret" not in repr(settings) + repr(bearer) + bearer.describe()


def test_context_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.history_tail_n, settings.memory_top_k, settings.context_token_budget) == (16, 8, 2000)
    tuned = Settings.from_env({"HISTORY_TAIL_N": "32", "MEMORY_TOP_K": "20", "CONTEXT_TOKEN_BUDGET": "8000"})
    assert (tuned.history_tail_n, tuned.memory_top_k, tuned.context_token_budget) == (32, 20, 8000)


# -- several instances on one server --------------------------------------------------------------


def add(store: Any, model: Embedder, memory_id: str, content: str) -> None:
    windows = model.windows(content)
    micros = created_us(memory_id)
    store.add(
        StoredMemory(memory_id, content, "2026-01-01T00:00:00Z", micros, (), content_hash(content)),
        model.embed(windows),
        windows,
    )


def test_instances_see_each_others_writes_including_keywords(
    chroma_server: ChromaServerProcess,
    model: Embedder,
    tmp_path: Path,
) -> None:
    server = ChromaServer("127.0.0.1", chroma_server.port, database=database())

    def instance(name: str, sync_seconds: float) -> ServerMemoryStore:
        (tmp_path / name).mkdir()
        index = SideDatabase(tmp_path / name / SIDE_DATABASE_FILE)
        return ServerMemoryStore(connect_server(server), MODEL_NAME, MODEL_DIMENSION, index, sync_seconds=sync_seconds)

    a, b = instance("a", 0.0), instance("b", 3600.0)
    add(a, model, "mem_17000000000000000001", "Zanzibar is where Priya wants to go diving")
    # B sees it at once through Chroma (vectors, content)...
    assert b.count() == 1 and b.get(["mem_17000000000000000001"])
    assert b.nearest(model.embed(["scuba trip plans"])[0], 3)[0].memory_id == "mem_17000000000000000001"
    # ...and in its own keyword index once it catches up (rate-limited: here only when forced).
    assert b.keyword("Zanzibar", 5) == []
    assert b.catch_up() == 1
    assert [m.memory_id for m in b.keyword("Zanzibar", 5)] == ["mem_17000000000000000001"]
    # A catches up by itself before each keyword search (sync_seconds=0): B's write and B's delete.
    add(b, model, "mem_17000000000000000002", "Priya's diving instructor is called Okonkwo")
    assert [m.memory_id for m in a.keyword("Okonkwo", 5)][:1] == ["mem_17000000000000000002"]
    assert b.delete("mem_17000000000000000001")
    assert a.keyword("Zanzibar", 5) == [] and a.count() == 1
    # An instance that starts later builds its index from the server.
    c = instance("c", 3600.0)
    assert [m.memory_id for m in c.keyword("Okonkwo", 5)] == ["mem_17000000000000000002"]


def test_another_instance_s_text_update_reaches_the_keyword_index_then_and_after_a_restart(
    chroma_server: ChromaServerProcess,
    model: Embedder,
    tmp_path: Path,
) -> None:
    server = ChromaServer("127.0.0.1", chroma_server.port, database=database())

    def instance(name: str) -> ServerMemoryStore:
        (tmp_path / name).mkdir(exist_ok=True)
        index = SideDatabase(tmp_path / name / SIDE_DATABASE_FILE)
        return ServerMemoryStore(connect_server(server), MODEL_NAME, MODEL_DIMENSION, index, sync_seconds=3600.0)

    a, b = instance("a"), instance("b")
    mid = "mem_17000000000000000003"
    add(a, model, mid, "The boat is moored at the Kilrush marina")
    assert b.catch_up() == 1 and [m.memory_id for m in b.keyword("Kilrush", 5)] == [mid]
    b.close()  # B is away while A changes the text
    old = a.get([mid])[mid]
    text = "The boat is moored at the Dingle harbour now"
    windows = model.windows(text)
    a.replace(
        dataclasses.replace(old, content=text, content_hash=content_hash(text), updated_us=old.created_us + 1),
        model.embed(windows),
        windows,
    )
    b = instance("b")  # restarted: same number of memories, a text changed
    assert [m.memory_id for m in b.keyword("Dingle harbour", 5)] == [mid] and b.keyword("Kilrush", 5) == []
    newer = "The boat is moored at the Fenit pier since May"
    windows = model.windows(newer)
    a.replace(
        dataclasses.replace(old, content=newer, content_hash=content_hash(newer), updated_us=old.created_us + 2),
        model.embed(windows),
        windows,
    )
    assert b.catch_up() == 1 and [m.memory_id for m in b.keyword("Fenit pier", 5)] == [mid]  # while running
    assert b.keyword("Dingle", 5) == []
    for store in (a, b):
        store.close()


def test_databases_keep_stores_apart(chroma_server: ChromaServerProcess, model: Embedder, tmp_path: Path) -> None:
    first = ChromaServer("127.0.0.1", chroma_server.port, database=database())
    second = ChromaServer("127.0.0.1", chroma_server.port, database=database())
    stores = []
    for i, server in enumerate((first, second)):
        (tmp_path / str(i)).mkdir()
        stores.append(
            ServerMemoryStore(
                connect_server(server),
                MODEL_NAME,
                MODEL_DIMENSION,
                SideDatabase(tmp_path / str(i) / SIDE_DATABASE_FILE),
            )
        )
    add(stores[0], model, "mem_17000000000000000003", "only in the first database")
    assert stores[0].count() == 1 and stores[1].count() == 0
    admin = chromadb.AdminClient(
        ChromaSettings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host="127.0.0.1",
            chroma_server_http_port=chroma_server.port,
            anonymized_telemetry=False,
        )
    )
    assert admin.get_database(first.database)["name"] == first.database  # created on first use


@pytest.mark.server
async def test_two_instances_appending_to_one_conversation_at_once_never_overwrite(
    chroma_server: ChromaServerProcess,
    tmp_path: Path,
    model_dir: Path,
) -> None:
    """Two runtimes (own clients, locks and local directories) race on the same conversation."""
    shared = {"chroma_host": "127.0.0.1", "chroma_port": chroma_server.port, "chroma_database": database()}
    one = make_runtime(Settings(chromadb_path=tmp_path / "one", model_dir=model_dir, **shared))
    two = make_runtime(Settings(chromadb_path=tmp_path / "two", model_dir=model_dir, **shared))
    try:
        assert one.history is not None and two.history is not None
        mine, theirs = one.history.history, two.history.history
        results = await asyncio.gather(
            *(
                h.append("race", "user", f"from {name} {i}")
                for i in range(6)
                for name, h in (("a", mine), ("b", theirs))
            )
        )
        assert sorted(r.turn_index for r in results) == list(range(12))
        assert [t.turn_index for t in (await theirs.get("race", 50)).turns] == list(range(12))
        assert sorted(t.text for t in (await mine.get("race", 50)).turns) == sorted(
            f"from {name} {i}" for i in range(6) for name in "ab"
        )
    finally:
        one.close()
        two.close()


# -- failures -----------------------------------------------------------------------------------------


@pytest.mark.server
async def test_unreachable_server_is_reported_then_used_once_it_is_up(tmp_path: Path, model_dir: Path) -> None:
    port = free_port()
    settings = Settings(
        chromadb_path=tmp_path / "local", model_dir=model_dir, chroma_host="127.0.0.1", chroma_port=port
    )
    runtime = make_runtime(settings)
    late: ChromaServerProcess | None = None
    try:
        with pytest.raises(StoreUnavailableError, match=rf"Chroma server at http://127\.0\.0\.1:{port}.*CHROMA_HOST"):
            await runtime.engine.store(StoreRequest("hello"))
        status = runtime.engine.status()
        assert status["store"] == "unavailable" and "Chroma server" in status["error"]
        assert runtime.history is not None
        with pytest.raises(StoreUnavailableError, match="Chroma server"):
            await runtime.history.history.append("c", "user", "hi")
        late = ChromaServerProcess(tmp_path / "late-db", port=port).start()
        assert (await runtime.engine.store(StoreRequest("hello"))).status == "stored"  # no restart needed
        assert (await runtime.history.history.append("c", "user", "hi")).turn_index == 0
    finally:
        runtime.close()
        if late is not None:
            late.stop()


@pytest.mark.server
async def test_health_says_unavailable_while_the_server_is_down_and_ready_once_it_is_back(
    tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 67 L11: /health said `ok` and `store: ready` while every tool answered "Connection refused"."""
    from symbiote.http.health import health_report
    from symbiote.storage.chroma import client

    monkeypatch.setattr(client, "HEARTBEAT_CACHE_SECONDS", 0.0)  # each health asks (else at most every 5 s)
    port = free_port()
    chroma = ChromaServerProcess(tmp_path / "db", port=port).start()
    settings = Settings(
        chromadb_path=tmp_path / "local", model_dir=model_dir, chroma_host="127.0.0.1", chroma_port=port
    )
    runtime = make_runtime(settings)
    try:
        await runtime.engine.store(StoreRequest("The boiler was serviced in March"))
        healthy = await health_report(runtime, [])
        assert (healthy["status"], healthy["store"], healthy["memories"]) == ("ok", "ready", 1)
        chroma.stop()
        down = await health_report(runtime, [])
        assert (down["status"], down["store"]) == ("degraded", "unavailable")
        assert f"Chroma server at http://127.0.0.1:{port} does not answer" in down["store_error"]
        assert "CHROMA_HOST" in down["store_error"] and down["memories"] is None
        chroma = ChromaServerProcess(tmp_path / "db", port=port).start()
        back = await health_report(runtime, [])
        assert (back["status"], back["store"], back["memories"]) == ("ok", "ready", 1)
    finally:
        runtime.close()
        chroma.stop()


class TokenProxy:
    """A reverse proxy in front of the Chroma server that wants `Authorization: Bearer <token>`."""

    def __init__(self, upstream: str, token: str) -> None:
        expected = f"Bearer {token}"
        client = httpx.Client(base_url=upstream, timeout=30)
        self.seen: list[str | None] = []
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append(self.headers.get("Authorization"))
                if self.headers.get("Authorization") != expected:
                    payload = b'{"error":"Unauthorized","message":"missing or wrong token"}'
                    status, headers = 401, {"Content-Type": "application/json"}
                else:
                    forward = {
                        k: v
                        for k, v in self.headers.items()
                        if k.lower() not in ("host", "content-length", "connection")
                    }
                    reply = client.request(self.command, self.path, content=body, headers=forward)
                    payload, status = reply.content, reply.status_code
                    headers = {"Content-Type": reply.headers.get("Content-Type", "application/json")}
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_one

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def proxy(chroma_server: ChromaServerProcess) -> Iterator[TokenProxy]:
    running = TokenProxy(chroma_server.url, "let-me-in")
    yield running
    running.close()


async def test_auth_token_is_sent_and_a_wrong_one_is_reported(
    proxy: TokenProxy, tmp_path: Path, model_dir: Path
) -> None:
    def settings(token: str, name: str) -> Settings:
        return Settings.from_env(
            {
                "CHROMADB_PATH": str(tmp_path / name),
                "SYMBIOTE_MODEL_DIR": str(model_dir),
                "CHROMA_HOST": f"http://127.0.0.1:{proxy.port}",
                "CHROMA_AUTH_TOKEN": token,
                "CHROMA_DATABASE": "proxied",
            }
        )

    good, bad = make_runtime(settings("let-me-in", "good")), make_runtime(settings("not-the-token", "bad"))
    try:
        stored = await good.engine.store(StoreRequest("Stored through an authenticating proxy"))
        assert (await good.engine.get(stored.memory_id)).content == "Stored through an authenticating proxy"
        with pytest.raises(StoreUnavailableError, match="refused the credentials.*CHROMA_AUTH_TOKEN") as refused:
            await bad.engine.store(StoreRequest("never stored"))
        assert "not-the-token" not in str(refused.value) and "let-me-in" not in str(refused.value)
        assert "Bearer let-me-in" in proxy.seen and "Bearer not-the-token" in proxy.seen
    finally:
        good.close()
        bad.close()


# -- two `symbiote serve` processes sharing one Chroma server, over MCP -----------------------------


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.server("the process is the point: two server processes sharing one Chroma server")
async def test_two_servers_share_memories_and_history_through_chroma(
    chroma_server: ChromaServerProcess,
    tmp_path: Path,
    model_dir: Path,
) -> None:
    env = {"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(chroma_server.port), "CHROMA_DATABASE": database()}
    first = ServerProcess(tmp_path / "one" / "data", env=env)
    second = ServerProcess(tmp_path / "two" / "data", env=env)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    await asyncio.gather(asyncio.to_thread(first.start), asyncio.to_thread(second.start))
    try:
        async with Client(first.mcp_url) as one:
            stored = await call(one, "store_memory", content="The user's favourite hiking trail is the Levada do Rei")
            await call(one, "append_history", conversation_id="trip", role="user", text="Plan a walk in Madeira")
        async with Client(second.mcp_url) as two:
            found = await call(two, "search_memory", query="favourite hiking trail")
            memory = await call(two, "get_memory", memory_id=stored["memory_id"])
            appended = await call(
                two, "append_history", conversation_id="trip", role="assistant", text="The Levada do Rei?"
            )
            history = await call(two, "get_history", conversation_id="trip")
        health = httpx.get(f"{second.base_url}/health", timeout=5).json()
    finally:
        first.stop()
        second.stop()
    assert stored["memory_id"] in [hit["memory_id"] for hit in found["results"]]
    assert memory["content"] == "The user's favourite hiking trail is the Levada do Rei"
    assert appended["turn_index"] == 1
    assert [(t["role"], t["text"]) for t in history["turns"]] == [
        ("user", "Plan a walk in Madeira"),
        ("assistant", "The Levada do Rei?"),
    ]
    assert health["store"] == "ready" and health["memories"] == 1
    # The data is on the server (nothing in the instances' own directories but the keyword index).
    direct = chromadb.HttpClient(
        host="127.0.0.1",
        port=chroma_server.port,
        database=env["CHROMA_DATABASE"],
        settings=ChromaSettings(anonymized_telemetry=False),
    )
    assert direct.get_collection("venom_memories").get(ids=[stored["memory_id"]])["ids"] == [stored["memory_id"]]
    assert direct.get_collection("venom_history").count() == 2
    assert not (tmp_path / "one" / "data" / "chroma.sqlite3").exists()


# -- docker-compose.yml -----------------------------------------------------------------------------


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def interpolate(value: str) -> str:
    """Compose's ${VAR:-default} with nothing set, and $$ -> $."""
    return re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), value).replace("$$", "$")


def test_compose_wires_symbiote_to_a_pinned_chroma_with_a_volume_and_health_check() -> None:
    services = compose()["services"]
    chroma, symbiote = services["chroma"], services["symbiote"]
    assert chroma["image"] == "chromadb/chroma:1.5.9"  # the server of the chromadb client we pin
    assert any(v.split(":")[1] == "/data" and v.split(":")[0] in compose()["volumes"] for v in chroma["volumes"])
    assert "ports" not in chroma  # no authentication of its own: never published
    assert chroma["healthcheck"]["test"][0] == "CMD"
    assert symbiote["build"] == {"context": ".", "target": "serve"}
    assert re.search(r"^FROM app AS serve$", (PROJECT_ROOT / "Dockerfile").read_text(), re.M)
    assert symbiote["depends_on"] == {"chroma": {"condition": "service_healthy"}}
    env = {key: interpolate(str(value)) for key, value in symbiote["environment"].items()}
    settings = Settings.from_env({**env, "HOST": "0.0.0.0", "SYMBIOTE_AUTH": "oauth"})  # as the serve image runs it
    server = ChromaServer.from_settings(settings)
    assert server is not None and server.url == "http://chroma:8000"
    assert any(v.split(":")[1] == "/mnt/symbiote" for v in symbiote["volumes"])
    assert settings.chromadb_path.is_relative_to("/mnt/symbiote")
    assert [interpolate(p) for p in symbiote["ports"]] == ["127.0.0.1:8000:8000"]


def health_check(port: int, path: str = "/api/v2/heartbeat") -> subprocess.CompletedProcess[str]:
    command = interpolate(compose()["services"]["chroma"]["healthcheck"]["test"][3])
    command = command.replace("/127.0.0.1/8000", f"/127.0.0.1/{port}").replace("/api/v2/heartbeat", path)
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=10)


def test_compose_health_check_passes_on_a_live_chroma_only(chroma_server: ChromaServerProcess) -> None:
    assert health_check(chroma_server.port).returncode == 0
    assert health_check(chroma_server.port, "/api/v2/no-such-thing").returncode != 0
    assert health_check(free_port()).returncode != 0


def compose_cli() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def test_compose_file_is_valid_for_docker_compose() -> None:
    """`docker compose config` needs no daemon; skipped where neither compose CLI is installed."""
    command = compose_cli()
    if command is None:
        pytest.skip("no docker compose CLI (plugin or docker-compose) to validate with")
    run = subprocess.run([*command, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


# -- issue 59: the distributed path tested through search ----------------------------------------

WORDS = ("Vrethmoor", "Quillastine", "Zorbakai")


async def found_by_keyword(client: Client, word: str) -> list[str]:
    """The ids a search for `word` returns (results, then below the cut-off) that its keywords matched."""
    found = await call(client, "search_memory", query=word)
    hits = [*found["results"], *found.get("below_cutoff", [])]
    return [hit["memory_id"] for hit in hits if hit.get("matched_by") in ("keyword", "both")]


@pytest.mark.server  # the Chroma server is a process of its own
async def test_one_instance_s_writes_reach_the_other_s_search_keywords_included(
    chroma_server: ChromaServerProcess, tmp_path: Path, model_dir: Path
) -> None:
    """Since b3fff63 a search on a Chroma server never caught its keyword index up (the test called
    `keyword()`, which did): the writer matched 3 of 3 made-up words, the other instance 0 of 3."""
    on_server = Settings(
        chromadb_path=tmp_path / "a",
        model_dir=model_dir,
        chroma_host="127.0.0.1",
        chroma_port=chroma_server.port,
        chroma_database=database(),
        chroma_keyword_sync_seconds=0.0,
    )
    writer = make_runtime(on_server)
    reader = make_runtime(dataclasses.replace(on_server, chromadb_path=tmp_path / "b"))
    async with Client(writer.server) as one, Client(reader.server) as two:
        await call(two, "memory_stats")  # the reader's store is open (and its index built) before the writes
        ids = {}
        for word in WORDS:
            stored = await call(one, "store_memory", content=f"The old lighthouse keeper's dog is named {word}.")
            ids[word] = stored["memory_id"]
        for word in WORDS:  # (a memory's keyword entry holds a little of the memories stored just before it)
            assert ids[word] in await found_by_keyword(one, word)
            assert ids[word] in await found_by_keyword(two, word), word
        await call(one, "delete_memory", memory_id=ids[WORDS[0]])
        assert ids[WORDS[0]] not in await found_by_keyword(two, WORDS[0])
        restored = await writer.engine.trash.restore([ids[WORDS[0]]])  # the owner's undo, in the console
        assert restored.restored == [ids[WORDS[0]]]
        assert ids[WORDS[0]] in await found_by_keyword(two, WORDS[0])
        await call(one, "link_memories", newer_id=ids[WORDS[2]], older_id=ids[WORDS[1]])
        older = await call(two, "get_memory", memory_id=ids[WORDS[1]])
        assert older["superseded_by"] == ids[WORDS[2]]
        assert ids[WORDS[2]] in await found_by_keyword(two, WORDS[2])
