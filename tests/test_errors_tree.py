"""One exception tree: every exception class the package defines descends from `SymbioteError`, so a
caller can catch "a Symbiote error" once (driver failures included, as `DriverError`)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import symbiote
from symbiote.errors import DriverError, InvalidInputError, SymbioteError, worded

def _modules() -> list[str]:
    """Every module of the package but the entry points (`__main__` runs the command line when imported)."""
    found = [info.name for info in pkgutil.walk_packages(symbiote.__path__, "symbiote.")]
    return sorted(name for name in found if not name.endswith(".__main__") and name != "symbiote.__main__")


def test_every_exception_class_descends_from_symbiote_error() -> None:
    outside, walked = [], 0
    for name in _modules():
        module = importlib.import_module(name)
        walked += 1
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException) and not issubclass(cls, SymbioteError):
                outside.append(f"{name}.{cls.__qualname__}")
    assert walked > 100, walked  # the walk found the package
    assert not outside, f"exception classes outside SymbioteError: {outside}"


def test_builtin_bases_callers_rely_on_are_kept() -> None:
    from symbiote.auth._sqlite import AuthStoreUnavailable
    from symbiote.auth_settings import OwnerSecretError
    from symbiote.config import ConfigError
    from symbiote.embedding.model import ModelMissingError
    from symbiote.memory.timeparse import TimePhraseError
    from symbiote.transfer.export_format import LineError

    for cls in (OwnerSecretError, ConfigError, TimePhraseError, LineError):
        assert issubclass(cls, ValueError), cls
    for cls in (AuthStoreUnavailable, ModelMissingError):
        assert issubclass(cls, RuntimeError), cls


def test_a_driver_failure_is_not_passed_through_as_words() -> None:
    from symbiote.storage._store_child import RemoteStoreError

    assert worded(InvalidInputError("x"))
    assert not worded(RemoteStoreError("OSError: disk full", 28))
    assert issubclass(RemoteStoreError, DriverError)
    assert not worded(ValueError("x"))
