"""The console's browser suites use the fixtures of the console's own tests (tests/console/conftest.py):
a signed-in server with an owner's memories, an empty server, Debian's Chromium through Playwright."""

from tests.console.conftest import api_key, browser, empty_server, owner_server, stored

__all__ = ["api_key", "browser", "empty_server", "owner_server", "stored"]
