"""The owner's commands: API keys, OAuth connections, the owner secret's hash, an empty store."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from symbiote.cli.environment import settings_from_env
from symbiote.config import Settings

if TYPE_CHECKING:
    from symbiote.auth import AuthStore


def _auth_store(settings: Settings) -> AuthStore:
    from symbiote.auth import AuthStore, default_auth_db

    return AuthStore(settings.auth_db_path or default_auth_db(settings.chromadb_path))


def _when(stamp: float | None) -> str:
    import datetime

    if stamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(stamp, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def keys(args: argparse.Namespace) -> int:
    """`symbiote keys create|list|revoke`: static API keys for clients that can send a header."""
    from symbiote.auth import AuthStoreUnavailable, resolve_mode
    from symbiote.errors import InvalidInputError
    from symbiote.storage import text

    for given in (vars(args).get("name"), vars(args).get("key")):  # create names one, revoke the other
        try:  # a command line is bytes: one that is not UTF-8 arrives as lone surrogates
            text.name(given or "", "the key's name or id")
        except InvalidInputError as exc:
            print(f"symbiote: {exc}", file=sys.stderr)
            return 2
    settings = settings_from_env()
    store = _auth_store(settings)
    try:
        if args.action == "create":
            name = " ".join(args.name.split())
            if not name or len(name) > 100:
                print(
                    "symbiote: give the key a name of 1 to 100 characters, e.g. `symbiote keys create vscode`",
                    file=sys.stderr,
                )
                return 2
            key, secret = store.create_api_key(name)
            print(f"Created API key {key.key_id} ({key.name}). Copy it now: it is not shown again.\n")
            print(f"    {secret}\n")
            print(f"Send it as an HTTP header:  Authorization: Bearer {secret}")
            if resolve_mode(settings) == "none":
                print(
                    "\nNote: with this configuration the server runs without authentication (SYMBIOTE_AUTH=none on "
                    "loopback); keys are checked when it runs with SYMBIOTE_AUTH=oauth."
                )
            return 0
        if args.action == "list":
            found = store.list_api_keys()
            if not found:
                print("No API keys. Create one with `symbiote keys create NAME`.")
                return 0
            print(f"{'ID':<14} {'NAME':<24} {'KEY':<16} {'CREATED':<22} {'LAST USED':<22} STATUS")
            for key in found:
                status = f"revoked {_when(key.revoked_at)}" if key.revoked_at else "active"
                print(
                    f"{key.key_id:<14} {key.name[:24]:<24} {key.hint:<16} {_when(key.created_at):<22} {_when(key.last_used_at):<22} {status}"
                )
            return 0
        revoked = store.revoke_api_key(args.key)
        if not revoked:
            print(
                f"symbiote: no active API key with id or name {args.key!r} (see `symbiote keys list`)", file=sys.stderr
            )
            return 1
        for key in revoked:
            print(f"Revoked API key {key.key_id} ({key.name}); it stops working immediately.")
        return 0
    except AuthStoreUnavailable as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()


def _sign_out_console(settings: Settings, store: AuthStore) -> None:
    """A new console signing key in the data directory: every console session ends."""
    from symbiote.console import SessionKey, key_path

    SessionKey(key_path(settings.chromadb_path)).rotate()
    store.forget_console_signouts()


def oauth(args: argparse.Namespace) -> int:
    """`symbiote oauth revoke-all`: disconnect every OAuth connector and sign the console out
    everywhere (API keys are untouched)."""
    from symbiote.auth import AuthStoreUnavailable

    settings = settings_from_env()
    store = _auth_store(settings)
    try:
        count = store.revoke_all_grants()
        _sign_out_console(settings, store)
    except (AuthStoreUnavailable, OSError) as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(f"Revoked {count} OAuth connection(s); each connector must sign in again with the owner secret.")
    print("Every console session was signed out as well.")
    return 0


def console(args: argparse.Namespace) -> int:
    """`symbiote console sign-out-all`: end every console session (a new signing key)."""
    from symbiote.auth import AuthStoreUnavailable

    settings = settings_from_env()
    store = _auth_store(settings)
    try:
        _sign_out_console(settings, store)
    except (AuthStoreUnavailable, OSError) as exc:
        print(f"symbiote: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print("Every console session was signed out; sign in again with the owner secret.")
    return 0


def owner_secret_hash(_args: argparse.Namespace) -> int:
    """Read an owner secret (prompt or stdin) and print its SYMBIOTE_OWNER_SECRET_HASH value."""
    import getpass

    from symbiote.auth import hash_secret
    from symbiote.auth_settings import GENERATE_HINT, MIN_OWNER_SECRET_LENGTH

    secret = getpass.getpass("Owner secret: ") if sys.stdin.isatty() else sys.stdin.readline()
    secret = secret.strip()
    if len(secret) < MIN_OWNER_SECRET_LENGTH:
        print(
            f"symbiote: the owner secret needs at least {MIN_OWNER_SECRET_LENGTH} characters; {GENERATE_HINT}",
            file=sys.stderr,
        )
        return 2
    print(hash_secret(secret))
    return 0


def reset(args: argparse.Namespace) -> int:
    """Start an empty memory store; the old data directory is moved aside, never deleted.

    The sign-in database (API keys, connected apps) stays unless `--sign-ins` says to set it
    aside too. A server still running on the old directory refuses to go on until restarted.
    """
    from symbiote.auth import AUTH_DB_NAME
    from symbiote.storage import reset_store

    settings = settings_from_env()
    if not args.confirm:
        print(
            f"symbiote: this moves {settings.chromadb_path} aside and starts an empty memory store. "
            "Run again with --confirm to do it (nothing is deleted; the old directory is kept).",
            file=sys.stderr,
        )
        return 2
    sign_ins: bool = args.sign_ins
    moved = reset_store(settings.chromadb_path, keep=() if sign_ins else (AUTH_DB_NAME,))
    if moved is None:
        print(f"created an empty memory store at {settings.chromadb_path}")
        return 0
    print(f"moved the old store to {moved}; {settings.chromadb_path} is now empty. Restart the server.")
    if sign_ins:
        print("The sign-in database went with it: API keys and connected apps must be set up again.")
    elif (settings.chromadb_path / AUTH_DB_NAME).exists():
        print("The sign-in database (API keys, connected apps) was kept; add --sign-ins to set it aside too.")
    return 0
