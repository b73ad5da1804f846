"""The auth building blocks on their own: mode policy and configuration, the owner secret, the
sign-in limiter, the store's rotation/replay/revocation rules, origins, and redirect URIs."""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import AnyUrl
from starlette.types import Scope

from symbiote.auth.auth_store import REFRESH_REUSE_GRACE, AuthStore
from symbiote.auth.origin import OriginResolver, client_address
from symbiote.auth.owner import OwnerSecret, SignInLimiter, hash_secret
from symbiote.auth.policy import chatgpt_tools_enabled, resolve_mode
from symbiote.auth.provider import SymbioteClient, redirect_uri_problem
from symbiote.auth_settings import OwnerSecretError, parse_secret_hash
from symbiote.config import ConfigError, Settings
from symbiote.http.security import allowed_hosts
from tests.conftest import make_app

SECRET = "a-perfectly-long-owner-secret"


# -- modes and configuration -------------------------------------------------------------------


def test_mode_is_none_on_loopback_and_oauth_anywhere_else() -> None:
    assert resolve_mode(Settings.from_env({})) == "none"
    assert resolve_mode(Settings.from_env({"HOST": "localhost"})) == "none"
    assert resolve_mode(Settings.from_env({"HOST": "0.0.0.0"})) == "oauth"
    assert resolve_mode(Settings.from_env({"HOST": "192.168.1.20"})) == "oauth"
    # Behind the Functions host the worker never binds; the public name decides.
    deployed = {"FUNCTIONS_WORKER_RUNTIME": "python", "WEBSITE_HOSTNAME": "symbiote.azurewebsites.net"}
    assert resolve_mode(Settings.from_env(deployed)) == "oauth"
    assert resolve_mode(Settings.from_env({**deployed, "WEBSITE_HOSTNAME": "localhost:7071"})) == "none"  # func start
    assert resolve_mode(Settings.from_env({"SYMBIOTE_AUTH": "oauth"})) == "oauth"
    assert resolve_mode(Settings.from_env({"SYMBIOTE_AUTH": "auto", "HOST": "0.0.0.0"})) == "oauth"


def test_unauthenticated_public_configurations_are_refused_unless_forced() -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"HOST": "0.0.0.0", "SYMBIOTE_AUTH": "none"})
    assert "SYMBIOTE_ALLOW_UNAUTHENTICATED" in str(refused.value)
    with pytest.raises(ConfigError):
        Settings.from_env(
            {"SYMBIOTE_AUTH": "none", "FUNCTIONS_WORKER_RUNTIME": "python", "WEBSITE_HOSTNAME": "x.azurewebsites.net"}
        )
    forced = Settings.from_env({"HOST": "0.0.0.0", "SYMBIOTE_AUTH": "none", "SYMBIOTE_ALLOW_UNAUTHENTICATED": "1"})
    assert resolve_mode(forced) == "none"


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"SYMBIOTE_AUTH": "maybe"}, "SYMBIOTE_AUTH='maybe'"),
        ({"SYMBIOTE_OWNER_SECRET": "short"}, "too short"),
        ({"SYMBIOTE_OWNER_SECRET": SECRET, "SYMBIOTE_OWNER_SECRET_HASH": "scrypt$1"}, "not both"),
        ({"SYMBIOTE_OWNER_SECRET_HASH": "bcrypt$whatever"}, "SYMBIOTE_OWNER_SECRET_HASH"),
        ({"SYMBIOTE_PUBLIC_URL": "http://memory.example.com"}, "must use https"),
        ({"SYMBIOTE_PUBLIC_URL": "https://memory.example.com/symbiote"}, "origin only"),
        ({"SYMBIOTE_PUBLIC_URL": "memory.example.com"}, "must look like"),
        ({"SYMBIOTE_ACCESS_TOKEN_TTL_SECONDS": "5"}, "out of range"),
        ({"SYMBIOTE_TRUST_FORWARDED_HEADERS": "perhaps"}, "SYMBIOTE_TRUST_FORWARDED_HEADERS"),
        ({"SYMBIOTE_CHATGPT_TOOLS": "sometimes"}, "SYMBIOTE_CHATGPT_TOOLS"),
        ({"SYMBIOTE_OPEN_REGISTRATION": "perhaps"}, "SYMBIOTE_OPEN_REGISTRATION"),
        ({"SYMBIOTE_REGISTRATIONS_PER_MINUTE": "0"}, "SYMBIOTE_REGISTRATIONS_PER_MINUTE=0 is out of range"),
        ({"SYMBIOTE_MAX_CONTENT_BYTES": "10"}, "SYMBIOTE_MAX_CONTENT_BYTES=10 is out of range"),
    ],
)
def test_bad_auth_settings_are_named(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as error:
        Settings.from_env(env)
    assert fragment in str(error.value)


def test_good_auth_settings_are_read() -> None:
    settings = Settings.from_env(
        {
            "SYMBIOTE_AUTH": "OAuth",
            "SYMBIOTE_OWNER_SECRET": SECRET,
            "SYMBIOTE_PUBLIC_URL": "https://Memory.Example.com/",
            "SYMBIOTE_ACCESS_TOKEN_TTL_SECONDS": "600",
            "SYMBIOTE_REFRESH_TOKEN_TTL_SECONDS": "86400",
            "SYMBIOTE_AUTH_DB": "/tmp/auth.sqlite3",
            "SYMBIOTE_TRUST_FORWARDED_HEADERS": "yes",
        }
    )
    assert settings.auth_mode == "oauth" and settings.public_url == "https://Memory.Example.com"
    assert settings.access_token_ttl_seconds == 600 and settings.refresh_token_ttl_seconds == 86400
    assert settings.auth_db_path == Path("/tmp/auth.sqlite3") and settings.trust_forwarded_headers is True
    assert SECRET not in repr(settings)


def test_create_app_refuses_a_public_bind_chosen_after_reading_the_environment(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """`symbiote serve --host 0.0.0.0` overrides HOST after Settings.from_env: the check runs again."""
    with pytest.raises(ConfigError, match="refusing to serve without authentication"):
        make_app(dataclasses.replace(settings, host="0.0.0.0", auth_mode="none"), warm_up=False)
    with caplog.at_level(logging.WARNING, logger="symbiote.auth"):
        app = make_app(
            dataclasses.replace(settings, host="0.0.0.0", auth_mode="none", allow_unauthenticated=True), warm_up=False
        )
    assert app.state.auth_mode == "none" and "AUTHENTICATION IS OFF" in caplog.text
    assert make_app(dataclasses.replace(settings, host="0.0.0.0"), warm_up=False).state.auth_mode == "oauth"


@pytest.mark.server("the process is the point: `symbiote serve` exits with code 2 and the reason")
def test_serve_on_a_public_interface_without_auth_exits_with_the_reason(tmp_path: Path) -> None:
    env = {**os.environ, "CHROMADB_PATH": str(tmp_path / "data"), "SYMBIOTE_AUTH": "none", "SYMBIOTE_PRELOAD": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "symbiote", "serve", "--host", "0.0.0.0", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to serve without authentication" in done.stderr and "Traceback" not in done.stderr


def test_chatgpt_tools_are_on_where_chatgpt_can_reach_the_server() -> None:
    assert not chatgpt_tools_enabled(Settings.from_env({}))  # loopback only: local clients use search_memory
    assert chatgpt_tools_enabled(Settings.from_env({"SYMBIOTE_CHATGPT_TOOLS": "on"}))
    assert chatgpt_tools_enabled(Settings.from_env({"SYMBIOTE_AUTH": "oauth"}))
    assert chatgpt_tools_enabled(Settings.from_env({"SYMBIOTE_ALLOWED_HOSTS": "abc.ngrok.app"}))  # a tunnel
    assert chatgpt_tools_enabled(Settings.from_env({"WEBSITE_HOSTNAME": "x.azurewebsites.net"}))
    assert not chatgpt_tools_enabled(Settings.from_env({"SYMBIOTE_AUTH": "oauth", "SYMBIOTE_CHATGPT_TOOLS": "off"}))


# -- the owner secret and the limiter ----------------------------------------------------------


def test_owner_secret_verifies_only_the_secret() -> None:
    owner = OwnerSecret(SECRET)
    assert owner.configured and owner.verify(SECRET)
    for wrong in ("", SECRET[:-1], SECRET + " ", SECRET.upper(), "x" * 5000):
        assert not owner.verify(wrong)
    assert not OwnerSecret().configured and not OwnerSecret().verify("")


def test_owner_secret_hash_round_trip_and_cli(tmp_path: Path) -> None:
    stored = hash_secret(SECRET)
    assert SECRET not in stored and parse_secret_hash(stored)[0] == 2**14
    assert OwnerSecret(secret_hash=stored).verify(SECRET) and not OwnerSecret(secret_hash=stored).verify("nope")
    for bad in ("scrypt$3$8$1$c2FsdHNhbHQ$AAAA", "scrypt$x$8$1$a$b", "plain"):
        with pytest.raises(OwnerSecretError):
            parse_secret_hash(bad)
    done = subprocess.run(
        [sys.executable, "-m", "symbiote", "owner-secret-hash"],
        input=SECRET + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "CHROMADB_PATH": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert OwnerSecret(secret_hash=done.stdout.strip()).verify(SECRET)
    assert Settings.from_env({"SYMBIOTE_OWNER_SECRET_HASH": done.stdout.strip()}).owner_secret_hash


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_limiter_backs_off_exponentially_per_source_and_resets_on_success() -> None:
    clock = Clock()
    limiter = SignInLimiter(clock=clock)
    for _ in range(4):
        limiter.failure("a")
        assert limiter.retry_after("a") == 0
    waits = []
    for _ in range(5):
        limiter.failure("a")
        waits.append(limiter.retry_after("a"))
    assert waits == [1, 2, 4, 8, 16]
    assert limiter.retry_after("b") == 0  # another address is not affected
    clock.now += 16
    assert limiter.retry_after("a") == 0
    limiter.success("a")
    limiter.failure("a")
    assert limiter.retry_after("a") == 0
    for _ in range(30):
        limiter.failure("a")
    assert limiter.retry_after("a") <= limiter.max_delay


def test_many_addresses_slow_everyone_down_but_lock_no_one_out() -> None:
    clock = Clock()
    limiter = SignInLimiter(clock=clock, global_max=10, global_window=600)
    for i in range(10):
        assert limiter.retry_after(f"10.0.0.{i}") == 0 and limiter.slowdown() == 0
        limiter.failure(f"10.0.0.{i}")
        clock.now += 1
    # On alert: every attempt waits a second first; a fresh address is still checked at once after
    # it (the owner gets in with the right secret), and gets one free try instead of five.
    assert limiter.on_alert() and limiter.slowdown() == limiter.alert_delay
    assert limiter.retry_after("198.51.100.1") == 0
    limiter.failure("203.0.113.7")
    assert limiter.retry_after("203.0.113.7") == 1
    clock.now += 600
    assert not limiter.on_alert() and limiter.slowdown() == 0


# -- the store ---------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> AuthStore:
    clock = Clock()
    auth = AuthStore(tmp_path / "auth.sqlite3", clock=clock)
    auth.clock = clock  # type: ignore[attr-defined]
    auth.register_client("client-1", {"client_id": "client-1", "redirect_uris": ["http://127.0.0.1/cb"]}, "s3cret")
    return auth


def grant(store: AuthStore):  # type: ignore[no-untyped-def]
    code, _ = store.add_code("client-1", {})
    issued = store.exchange_code(code, "client-1", ["memory"], "http://127.0.0.1:1/mcp", 3600, 86400)
    assert issued is not None
    return code, issued


def test_refresh_rotation_and_reuse_detection(store: AuthStore) -> None:
    _code, issued = grant(store)
    rotated = store.rotate_refresh(issued.refresh_token, ["memory"], 3600, 86400)
    assert rotated is not None
    assert store.rotate_refresh(issued.refresh_token, ["memory"], 3600, 86400) is None  # used once only
    assert store.load_refresh(issued.refresh_token) is None  # a retry within the grace: refused, grant kept
    assert store.load_token(rotated.access_token, "access") is not None
    store.clock.now += REFRESH_REUSE_GRACE + 1  # type: ignore[attr-defined]
    assert store.load_refresh(issued.refresh_token) is None  # replayed later: treated as stolen
    assert store.load_token(rotated.access_token, "access") is None
    assert store.load_refresh(rotated.refresh_token) is None


def test_codes_are_single_use_and_short_lived(store: AuthStore) -> None:
    code, issued = grant(store)
    assert store.load_code(code) is None  # replay: unknown, and the grant it made is revoked
    assert store.load_token(issued.access_token, "access") is None
    late, _ = store.add_code("client-1", {})
    store.clock.now += 301  # type: ignore[attr-defined]
    assert store.exchange_code(late, "client-1", ["memory"], None, 3600, 86400) is None
    wrong_client, _ = store.add_code("client-1", {})
    assert store.exchange_code(wrong_client, "client-2", ["memory"], None, 3600, 86400) is None


def test_tokens_expire(store: AuthStore) -> None:
    _code, issued = grant(store)
    store.clock.now += 3601  # type: ignore[attr-defined]
    assert store.load_token(issued.access_token, "access") is None
    assert store.load_refresh(issued.refresh_token) is not None
    store.clock.now += 86400  # type: ignore[attr-defined]
    assert store.load_refresh(issued.refresh_token) is None


def test_api_keys_revoke_by_id_or_name(store: AuthStore) -> None:
    first, first_key = store.create_api_key("laptop")
    second, second_key = store.create_api_key("laptop")
    third, third_key = store.create_api_key("ci")
    assert store.check_api_key(first_key) == dataclasses.replace(first)
    assert [k.key_id for k in store.revoke_api_key(third.key_id)] == [third.key_id]
    assert store.check_api_key(third_key) is None and store.check_api_key(first_key) is not None
    assert {k.key_id for k in store.revoke_api_key("laptop")} == {first.key_id, second.key_id}
    assert store.check_api_key(first_key) is None and store.check_api_key(second_key) is None
    assert store.revoke_api_key("laptop") == []
    assert store.check_api_key("sym_key_" + "x" * 43) is None


def test_revoke_all_grants_disconnects_every_client(store: AuthStore) -> None:
    _c1, one = grant(store)
    _c2, two = grant(store)
    assert store.revoke_all_grants() == 2
    assert store.load_token(one.access_token, "access") is None and store.load_token(two.access_token, "access") is None


@pytest.mark.slow
def test_pending_tickets_are_single_use_and_capped(store: AuthStore) -> None:
    ticket = store.add_pending("client-1", {"n": 0})
    assert store.get_pending(ticket) == ("client-1", {"n": 0})
    assert store.pop_pending(ticket) == ("client-1", {"n": 0}) and store.pop_pending(ticket) is None
    from symbiote.auth._oauth_records import MAX_PENDING

    tickets = []
    for n in range(MAX_PENDING + 5):
        store.clock.now += 0.001  # type: ignore[attr-defined]
        tickets.append(store.add_pending("client-1", {"n": n}))
    # A full table refuses new sign-ins; the ones in progress are never dropped for them.
    assert store.get_pending(tickets[0]) is not None and tickets[-1] is None


def test_unwritable_auth_database_is_a_clear_error(tmp_path: Path) -> None:
    from symbiote.auth.auth_store import AuthStoreUnavailable

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(AuthStoreUnavailable, match="SYMBIOTE_AUTH_DB"):
        AuthStore(blocker / "auth.sqlite3").check()


# -- origins and redirect URIs -----------------------------------------------------------------


def scope_of(host: str, scheme: str = "http", **headers: str) -> Scope:
    raw = [(b"host", host.encode())] + [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "scheme": scheme, "headers": raw, "client": ("10.1.2.3", 5555)}


def test_origin_follows_forwarded_headers_only_when_trusted() -> None:
    settings = Settings.from_env({"SYMBIOTE_ALLOWED_HOSTS": "memory.example.com"})
    plain = OriginResolver(settings, allowed_hosts(settings))
    proxied = scope_of(
        "127.0.0.1:7071",
        x_forwarded_host="memory.example.com",
        x_forwarded_proto="https",
        x_forwarded_for="198.51.100.9, 203.0.113.5:4711",
    )
    assert plain(proxied) == "http://127.0.0.1:7071"
    assert plain(scope_of("memory.example.com:443", "https")) == "https://memory.example.com"
    assert plain(scope_of("evil.example")) is None
    trusted = dataclasses.replace(settings, trust_forwarded_headers=True)
    resolver = OriginResolver(trusted, allowed_hosts(trusted))
    assert resolver(proxied) == "https://memory.example.com"
    assert resolver(scope_of("127.0.0.1", x_forwarded_host="evil.example")) is None
    # The address the proxy appended (the last entry, its port dropped); the client's own entries are ignored.
    assert client_address(proxied, True) == "203.0.113.5" and client_address(proxied, False) == "10.1.2.3"
    # Azure's platform names switch trust on by default.
    azure = Settings.from_env({"WEBSITE_HOSTNAME": "symbiote.azurewebsites.net"})
    assert (
        OriginResolver(azure, allowed_hosts(azure))(
            scope_of("localhost", x_forwarded_host="symbiote.azurewebsites.net", x_forwarded_proto="https")
        )
        == "https://symbiote.azurewebsites.net"
    )
    # The platform's names are HTTPS-only at its ingress, even if no X-Forwarded-Proto arrives.
    assert (
        OriginResolver(azure, allowed_hosts(azure))(scope_of("symbiote.azurewebsites.net"))
        == "https://symbiote.azurewebsites.net"
    )


def test_public_url_wins_but_the_host_is_still_checked() -> None:
    settings = Settings.from_env(
        {"SYMBIOTE_PUBLIC_URL": "https://memory.example.com", "SYMBIOTE_ALLOWED_HOSTS": "memory.example.com"}
    )
    resolver = OriginResolver(settings, allowed_hosts(settings))
    assert resolver(scope_of("127.0.0.1:8000")) == "https://memory.example.com"
    assert resolver(scope_of("evil.example")) is None


def test_redirect_uri_rules() -> None:
    assert redirect_uri_problem(AnyUrl("https://claude.ai/api/mcp/auth_callback")) is None
    assert redirect_uri_problem(AnyUrl("https://chatgpt.com/connector_platform_oauth_redirect")) is None
    assert redirect_uri_problem(AnyUrl("http://127.0.0.1:33418/")) is None
    assert redirect_uri_problem(AnyUrl("http://localhost/cb")) is None
    assert redirect_uri_problem(AnyUrl("cursor://anysphere.cursor-retrieval/oauth/callback")) is None
    assert redirect_uri_problem(AnyUrl("http://example.com/cb"))
    assert redirect_uri_problem(AnyUrl("javascript:alert(1)"))
    assert redirect_uri_problem(AnyUrl("https://example.com/cb#frag"))
    client = SymbioteClient(
        client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1/cb"), AnyUrl("https://app.example/cb")]
    )
    assert str(client.validate_redirect_uri(AnyUrl("http://127.0.0.1:4567/cb"))) == "http://127.0.0.1:4567/cb"
    for refused in ("http://127.0.0.1:4567/other", "http://localhost:4567/cb", "https://app.example:444/cb"):
        with pytest.raises(Exception, match="not registered"):
            client.validate_redirect_uri(AnyUrl(refused))
    assert client.validate_scope("claudeai") == ["memory"] and client.validate_scope(None) == ["memory"]
