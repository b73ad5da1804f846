"""Shared fixtures: the exported model (loaded once per test process), runtimes and engines that are
closed after each test, real server processes on free ports, real MCP clients."""

from __future__ import annotations

import functools
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

# anyio's modules are imported here, while the stack is shallow: pytest rewrites them (anyio ships
# a pytest plugin), and CPython 3.11.7's parser can fail with "AST constructor recursion depth
# mismatch" when the first import happens deep inside a test (the stdio client's subprocess).
import anyio._backends._asyncio
import anyio._core._subprocesses  # noqa: F401
import httpx
import pytest
from xdist.scheduler import LoadScopeScheduling

from symbiote.config import PROJECT_ROOT, Settings
from symbiote.embedding.model import MANIFEST_NAME, Embedder, Passages, WarmModel

if TYPE_CHECKING:
    import numpy as np
    from starlette.applications import Starlette

    from symbiote.memory import MemoryEngine
    from symbiote.runtime import Runtime

MODEL_DIR = Path(os.environ.get("SYMBIOTE_MODEL_DIR", PROJECT_ROOT / "models" / "all-MiniLM-L6-v2"))

# -- tiers: `server` marks a test that starts a server process or a browser (`scripts/test.sh --quick`
# leaves them out). A test is marked when a fixture it uses gives a server process (its annotation
# says so) or the browser, or by hand; `mark_what_starts_servers` fails an unmarked one that starts one.

BROWSER_FIXTURES = {"browser"}
# Processes that serve (symbiote serve or stdio, a Chroma server) or browse: what the quick tier leaves out.
# A program and its first word, as a command names them (a path's last part): not words anywhere in the
# command, which a checkout's own path or a `python -c` program's imports can hold.
SERVING = {("symbiote", "serve"), ("symbiote", "stdio"), ("chroma", "run"), ("cli.js", "run-driver"), ("chromium", "")}
_started: list[str] = []  # commands started since the current test began (an audit hook sees every Popen)
_started_in_run: list[str] = []  # every command started in this run, in order
_servers_started: dict[str, list[str]] = {}  # test id -> the Symbiote servers its setup, call or teardown started
_first_command: dict[str, int] = {}  # test id -> where its commands begin in _started_in_run


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "subprocess.Popen":
        argv = args[1]
        command = " ".join(map(str, argv)) if isinstance(argv, list | tuple) else str(argv)
        _started.append(command)
        _started_in_run.append(command)


sys.addaudithook(_audit)


def _serves(command: str) -> bool:
    return bool(_programs(command) & SERVING)


def _programs(command: str) -> set[tuple[str, str]]:
    """Each word of `command` with the one after it (a path as its last part): `python -m symbiote
    serve` holds ("symbiote", "serve"), a Chroma server ("chroma", "run"), Playwright's driver ("cli.js",
    "run-driver"), and each word alone, so a browser holds ("chromium", "")."""
    names = [word.rsplit("/", 1)[-1] for word in command.split()]
    return {*zip(names, names[1:]), *((name, "") for name in names)}


def _gives_a_server(fixturedefs: Sequence[Any]) -> bool:
    return any("ServerProcess" in str(getattr(d.func, "__annotations__", {}).get("return", "")) for d in fixturedefs)


# The files whose tests open a browser. With two test processes (`scripts/test.sh`), a file's tests run
# in one and these files all in one, so that two browsers never run at once (each holds some 800 MiB
# beside its server); pytest-xdist's scheduler sees test ids only, so they are named here, and
# collection fails if a test opens a browser outside them.
BROWSER_FILES = frozenset(
    {
        *(f"tests/console/test_{name}.py" for name in "editing empty history import_sources imports".split()),
        *(f"tests/console/test_{name}.py" for name in ("statistics", "trash_pages")),
        *(f"tests/e2e/console/test_{name}.py" for name in ("accessibility", "console", "phone_layout")),
        *(f"tests/e2e/card/test_{name}.py" for name in ("accessibility", "build", "card")),
        "tests/clients/test_mcp_remote.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        names = set(item.fixturenames)  # type: ignore[attr-defined]
        if "sampled" in names:
            item.add_marker(pytest.mark.volume)  # `-m volume` selects them; a failure names the seed
        browses = bool(names & BROWSER_FIXTURES) or item.get_closest_marker("browser") is not None
        if browses and item.nodeid.split("::")[0] not in BROWSER_FILES:
            raise pytest.UsageError(
                f"{item.nodeid} opens a browser: name its file in BROWSER_FILES (tests/conftest.py)"
            )
        if browses or any(_gives_a_server(defs) for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.server)


class OneBrowserAtATime(LoadScopeScheduling):
    """pytest-xdist's `loadfile` (a file's tests in one process), with every file of BROWSER_FILES in one."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return "browsers" if path in BROWSER_FILES else path


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> OneBrowserAtATime:
    return OneBrowserAtATime(config, log)


# -- volume (docs/tests.md: tiers): a test whose point is volume (a fuzz's thousands of inputs, a flood, a
# large store) runs a sample by default and its full volume under `--soak`. The sample is drawn with
# the run's seed, new at every run unless `--seed N` (or SYMBIOTE_TEST_SEED) gives it: the header prints
# it, and so does the report of a failing volume test, so `--seed N` draws that sample again.
SEED_VARIABLE = "SYMBIOTE_TEST_SEED"  # also hands the controller's seed to pytest-xdist's workers


@dataclass
class VolumeRun:
    """This run's choice: the full volume or a sample, and the seed the samples are drawn with."""

    soak: bool = False
    seed: int = field(default_factory=lambda: random.SystemRandom().randrange(1, 1_000_000))


RUN = VolumeRun()


@dataclass(frozen=True)
class Volume:
    """How much of a volume test runs: `count` inputs (the full volume under `--soak`, else the
    sample), drawn with `rng`, seeded from the run's seed and `name` (so a test draws the same inputs
    whatever else runs); `seed` is an integer of the same, for a generator that takes one."""

    count: int
    rng: random.Random
    seed: int
    soak: bool


def volume(full: int, sample: int, name: str) -> Volume:
    """The one sampling rule: `full` under `--soak`, `sample` otherwise; a module-level count
    (hypothesis' examples, a parameter list) calls it at import, a test through the `volume` fixture.
    Its test needs the `volume` mark (the fixture adds it) for a failure to name the seed."""
    rng = random.Random(f"{RUN.seed}:{name}")
    return Volume(full if RUN.soak else min(sample, full), rng, rng.randrange(2**32), RUN.soak)


@pytest.fixture
def sampled(request: pytest.FixtureRequest) -> Callable[[int, int], Volume]:
    """`volume` for this test: `sampled(full, sample)`, drawn from the run's seed and the test's id
    (its test carries the `volume` mark: `pytest_collection_modifyitems`)."""
    return lambda full, sample: volume(full, sample, request.node.nodeid)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("symbiote")
    group.addoption("--soak", action="store_true", help="run every volume test at its full volume (tests/conftest.py)")
    group.addoption("--seed", type=int, default=None, help="the seed the volume tests draw their samples with")


def pytest_configure(config: pytest.Config) -> None:
    RUN.soak = bool(config.getoption("soak"))
    given = config.getoption("seed") or os.environ.get(SEED_VARIABLE)
    if given:
        RUN.seed = int(given)
    os.environ[SEED_VARIABLE] = str(RUN.seed)  # workers started after this draw the same samples


def volume_line() -> str:
    if RUN.soak:
        return f"volume: full (--soak), seed {RUN.seed}"
    return f"volume: sampled with seed {RUN.seed} (--seed {RUN.seed} draws it again; --soak runs the full volume)"


def pytest_report_header(config: pytest.Config) -> str:
    return volume_line()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing volume test names the seed that draws its sample again."""
    report = yield
    if report.failed and item.get_closest_marker("volume") is not None:
        mode = " --soak" if RUN.soak else ""
        report.sections.append(("volume", f"drawn with seed {RUN.seed}: pytest {item.nodeid} --seed {RUN.seed}{mode}"))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Which tests start a Symbiote server process (a module's shared one counts for the test that
    set it up): the run's end prints how many (docs/tests.md), and SYMBIOTE_TEST_SERVERS_FILE lists them."""
    _first_command[item.nodeid] = len(_started_in_run)
    try:
        return (yield)
    finally:
        symbiote = _servers_of(item)
        del _first_command[item.nodeid]
        if symbiote:
            _servers_started[item.nodeid] = symbiote


def _servers_of(item: pytest.Item) -> list[str]:
    """The Symbiote servers started so far for `item`: its setup (a module's shared server too) and call."""
    return [
        c for c in _started_in_run[_first_command.get(item.nodeid, len(_started_in_run)) :] if _is_symbiote_server(c)
    ]


def _is_symbiote_server(command: str) -> bool:
    return bool(_programs(command) & {("symbiote", "serve"), ("symbiote", "stdio")})


def servers_line() -> str:
    serve = sum(any(" serve" in c for c in commands) for commands in _servers_started.values())
    stdio = sum(any(" stdio" in c for c in commands) for commands in _servers_started.values())
    return f"tests that started `symbiote serve`: {serve}; `symbiote stdio`: {stdio}"


# -- slow (docs/tests.md: tiers): a test whose own work takes SLOW_SECONDS or more on 2 cores carries the
# `slow` mark, and the quick tier leaves it out with the server tests; the whole suite runs it. A run
# names the unmarked tests that took that long, so the mark stays true without failing on a busy machine.
SLOW_SECONDS = 2.0
_unmarked_seconds: dict[str, float] = {}  # test id -> its setup, call and teardown, for the quick tier's tests


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the controller (every test process's reports reach it): the time of each test the quick tier
    runs (marked neither `slow` nor `server`)."""
    quick = "slow" not in report.keywords and "server" not in report.keywords
    if quick and not os.environ.get("PYTEST_XDIST_WORKER"):
        _unmarked_seconds[report.nodeid] = _unmarked_seconds.get(report.nodeid, 0.0) + report.duration


def slow_line() -> str | None:
    slow = sorted((seconds, test) for test, seconds in _unmarked_seconds.items() if seconds >= SLOW_SECONDS)
    if not slow:
        return None
    named = "; ".join(f"{test} {seconds:.1f} s" for seconds, test in reversed(slow))
    return f"took {SLOW_SECONDS:g} s or more without the slow mark (the quick tier runs them): {named}"


# -- the memory budget (docs/tests.md): the test process's peak resident memory, checked at the end.
MEMORY_BUDGET_MB = int(os.environ.get("SYMBIOTE_TEST_MEMORY_BUDGET_MB", "3072"))


def peak_rss_mb() -> float:
    """The test process's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


_worker_peaks: dict[str, float] = {}  # with two test processes, the controller's record of each one's peak


def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist, in the controller: a test process's servers and peak, sent when it ended."""
    output = node.workeroutput
    _servers_started.update(output.get("symbiote_servers", {}))
    if "peak_mb" in output:
        _worker_peaks[node.workerinput["workerid"]] = output["peak_mb"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test process held more than the budget: a runtime, a model or a store
    kept after its test is the usual cause (tests/test_closing.py shows how one is found). A test
    process of pytest-xdist hands its figures to the controller, which prints and checks them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session.config.workeroutput.update(symbiote_servers=_servers_started, peak_mb=peak_rss_mb())  # type: ignore[attr-defined]
        return
    peaks = _worker_peaks or {"": peak_rss_mb()}
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    held = ", ".join(f"{name} {mb:.0f} MB".strip() for name, mb in sorted(peaks.items()))
    line = f"test process peak resident memory: {held} (budget {MEMORY_BUDGET_MB} MB each)"
    if reporter is not None:
        reporter.write_line(volume_line())  # again at the end: `-q` leaves the header out
        reporter.write_line(servers_line())
        reporter.write_line(line)
        slow = slow_line()
        if slow:
            reporter.write_line(slow, yellow=True)
    listing = os.environ.get("SYMBIOTE_TEST_SERVERS_FILE")
    if listing:
        Path(listing).write_text("".join(f"{test}\t{' | '.join(c)}\n" for test, c in sorted(_servers_started.items())))
    if max(peaks.values()) > MEMORY_BUDGET_MB and session.testscollected:
        if reporter is not None:
            reporter.write_line("FAILED: a test process passed its memory budget", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def mark_what_starts_servers(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts a server process or a browser must carry the `server` mark, or the quick
    tier would start it too: checked on every run, so the marks stay true."""
    _started.clear()
    yield
    serving = [command for command in _started if _serves(command)]
    if serving and request.node.get_closest_marker("server") is None:
        pytest.fail(f"this test starts {serving[0]!r}: mark it @pytest.mark.server (or its module)", pytrace=False)
    if _servers_of(request.node) and not any(marker.args for marker in request.node.iter_markers("server")):
        pytest.fail(
            "this test starts a Symbiote server process: say why the process, the port or the transport is the "
            'point in its mark, @pytest.mark.server("why") (or its module\'s); tool behaviour needs none (the '
            "in_process fixture)",
            pytrace=False,
        )


class SharedModel:
    """The one loaded model of the test process, for every runtime and engine the tests build: the
    model is immutable, and a copy per runtime held about 90 MB each. One call at a time (the
    runtimes' embedder threads may call it together; the tokenizers are not made for that)."""

    def __init__(self, model: Embedder) -> None:
        self._model = model
        self._lock = threading.Lock()
        self.name = model.name
        self.dimension = model.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._model.embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> list[Passages]:
        with self._lock:
            return self._model.embed_passages(texts)

    def windows(self, text: str) -> list[str]:
        with self._lock:
            return self._model.windows(text)


@functools.cache
def shared_model() -> WarmModel:
    """The real model with the warm vectors a runtime loads (`symbiote.runtime.load_embedder`), once."""
    from symbiote.runtime import load_embedder

    loaded = load_embedder(MODEL_DIR)
    if isinstance(loaded, WarmModel):
        return WarmModel(SharedModel(loaded.model), loaded.vectors)
    return WarmModel(SharedModel(loaded), {})


_BUILT: list[Runtime] = []  # every runtime the helpers below built, for `close_what_tests_built`


def make_runtime(settings: Settings, **options: Any) -> Runtime:
    """`build_runtime` with the shared model. Closed after the test that built it at the latest
    (`close_what_tests_built`), or after its module or session if a fixture of that scope built it."""
    from symbiote.runtime import build_runtime

    built = build_runtime(settings, load_model=shared_model, **options)
    _BUILT.append(built)
    return built


def make_app(settings: Settings, **options: Any) -> Starlette:
    """`create_app` with the shared model; its lifespan closes the runtime it builds, and if it never
    ran, `close_what_tests_built` does."""
    from symbiote.http.app import create_app

    app = create_app(settings, load_model=shared_model, **options)
    if "runtime" not in options:
        _BUILT.append(app.state.runtime)
    return app


def close_built(since: int) -> None:
    """Close the runtimes built since `_BUILT` had `since` entries (closing one twice does nothing)."""
    while len(_BUILT) > since:
        _BUILT.pop().close()


@pytest.fixture(autouse=True)
def close_what_tests_built() -> Iterator[None]:
    """Whatever a test builds is closed after it: a runtime left open keeps its store and threads."""
    since = len(_BUILT)
    yield
    close_built(since)


@pytest.fixture(scope="module", autouse=True)
def close_what_modules_built() -> Iterator[None]:
    """The same for a module's fixtures (set up before this test's, after this one). A Chroma store
    the module's tests or fixtures opened themselves must be closed by then too: this process keeps a
    path's core (its vectors, indexes and threads) until its last client closes, so one left open
    stayed for the session (the 5,600 records of tests/storage/test_batches.py held 272 MB to the end)."""
    from symbiote.storage.chroma.embedded import EmbeddedChroma

    since = len(_BUILT)
    before = set(EmbeddedChroma._cores)
    yield
    close_built(since)
    left = sorted(set(EmbeddedChroma._cores) - before)
    if left:
        pytest.fail(f"this module left the Chroma store at {left[0]} open: close it (or its runtime)", pytrace=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """`symbiote serve` as a real child process, the way a user runs it."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.env = {
            **os.environ,
            "CHROMADB_PATH": str(data_dir),
            "PORT": str(self.port),
            "HF_HUB_OFFLINE": "1",
            "SYMBIOTE_MODEL_DIR": str(MODEL_DIR),
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"server-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def start(self, wait_ready: bool = True, wait_health: bool = True) -> ServerProcess:
        """`wait_health=False` returns at once: the caller polls (the handshake tests)."""
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "symbiote", "serve"], env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        if not wait_health:
            return self
        deadline = time.monotonic() + 60
        # One client for every poll: a client loads the CA bundle when it is made (most of a poll's time).
        with httpx.Client(base_url=self.base_url, timeout=2) as poller:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    health = poller.get("/health").json()
                    if not wait_ready or health["store"] in ("ready", "unavailable"):
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        raise RuntimeError(f"server did not become healthy:\n{self.log()}")

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(autouse=True)
def own_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own user cache directory (`symbiote.fastboot.cache_files`): a handshake recorded by
    one test's server must not answer for the next test's "first start"."""
    path = tmp_path / "user-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


@pytest.fixture(scope="session")
def model_dir() -> Path:
    if not (MODEL_DIR / MANIFEST_NAME).is_file():
        from symbiote.embedding.onnx_export import export_model

        export_model(MODEL_DIR)
    return MODEL_DIR


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[ServerProcess]:
    """One server for a module's tests that only add data and look for what they added; a module's, not
    the session's: one held for the whole run beside every other test's servers held some 400 MB."""
    proc = ServerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    yield proc
    proc.stop()


@pytest.fixture
def fresh_server(tmp_path: Path, model_dir: Path) -> Iterator[ServerProcess]:
    """A server on an empty store, for tests that need to know everything in it."""
    proc = ServerProcess(tmp_path / "data").start()
    yield proc
    proc.stop()


@dataclass
class InProcess:
    """The real app in this process: its MCP server object for the SDK's in-memory client
    (`Client(in_process.server)`, as the SDK's own tests drive a server), and its HTTP routes (the
    console, health, memory links) through httpx's ASGI transport. No lifespan runs: `/mcp` over
    HTTP is for the tests whose point is the transport (`serving` in tests/http/test_envelope.py)."""

    runtime: Runtime
    app: Starlette

    @property
    def server(self) -> Any:
        return self.runtime.server

    @property
    def engine(self) -> MemoryEngine:
        return self.runtime.engine

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://127.0.0.1", timeout=30)


@pytest.fixture
def in_process(settings: Settings) -> Iterator[InProcess]:
    """A runtime on an empty store and the app over it, in this process; closed after the test."""
    built = make_runtime(settings)
    yield InProcess(built, make_app(settings, runtime=built))
    built.close()


@pytest.fixture
def settings(tmp_path: Path, model_dir: Path) -> Settings:
    """Engine-level tests run Chroma in-process (SYMBIOTE_STORE_PROCESS=off): the same store code,
    without starting a store process (and importing Chroma again) for every test. Every test
    through `symbiote serve` and tests/storage/test_process.py use the default, the store process."""
    return Settings(chromadb_path=tmp_path / "data", model_dir=model_dir, store_process=False)


@pytest.fixture(scope="session")
def model() -> Embedder:
    """The shared model itself, for tests of the storage below the engine."""
    return shared_model().model


@pytest.fixture
async def runtime(settings: Settings) -> AsyncIterator[Runtime]:
    """A runtime on `settings` (override `settings` in a module for others), closed after the test."""
    built = make_runtime(settings)
    yield built
    built.close()


@pytest.fixture
def engine(runtime: Runtime) -> MemoryEngine:
    """The `runtime` fixture's engine."""
    return runtime.engine
