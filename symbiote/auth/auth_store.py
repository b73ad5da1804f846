"""Persistent OAuth and API-key state: one small SQLite file in the data directory.

Registered clients, pending consents, authorization codes, grants with their access and refresh
tokens, and API keys survive a restart (so a scale-to-zero wake keeps Claude connected). Every
credential is stored as its SHA-256 digest only: codes, tokens, API keys, client secrets and
consent tickets are high-entropy random strings, so a digest cannot be reversed or guessed, and a
copy of the file grants nothing. Nothing here logs a credential.

The file and its transactions are in `_sqlite`, the OAuth records in `_oauth_records`, the API
keys in `_api_keys`, signed-out console sessions in `_console_signouts`; `AuthStore` is the one
object the rest of Symbiote uses.
"""

from __future__ import annotations

from symbiote.auth._api_keys import API_KEY_PREFIX, ApiKey, ApiKeys
from symbiote.auth._console_signouts import ConsoleSignOuts
from symbiote.auth._oauth_records import REFRESH_REUSE_GRACE, IssuedTokens, OAuthRecords, TokenRecord
from symbiote.auth._sqlite import AUTH_DB_NAME, AuthStoreUnavailable, default_auth_db

__all__ = [
    "API_KEY_PREFIX",
    "AUTH_DB_NAME",
    "REFRESH_REUSE_GRACE",
    "ApiKey",
    "AuthStore",
    "AuthStoreUnavailable",
    "IssuedTokens",
    "TokenRecord",
    "default_auth_db",
]


class AuthStore(OAuthRecords, ApiKeys, ConsoleSignOuts):
    """Thread-safe access to the auth database; opened on first use."""
