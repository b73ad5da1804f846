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


def _defined_exceptions() -> list[type[BaseException]]:
    found = []
    for name in _modules():
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found.append(cls)
    return found


def test_every_exception_class_descends_from_symbiote_error() -> None:
    defined = _defined_exceptions()
    outside = [f"{cls.__module__}.{cls.__qualname__}" for cls in defined if not issubclass(cls, SymbioteError)]
    assert len(defined) > 20, defined  # the walk found the package's errors
    assert not outside, f"exception classes outside SymbioteError: {outside}"


def test_no_error_has_a_second_root() -> None:
    """Between a class and Exception only the package's own classes: nothing catches one of its
    errors by a builtin base such as ValueError, so the tree alone says what an error is."""
    builtin = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _defined_exceptions()
        if any(not base.__module__.startswith("symbiote") for base in cls.__mro__[: cls.__mro__.index(Exception)])
    ]
    assert not builtin, f"exception classes with a builtin base besides Exception: {builtin}"


def test_a_driver_failure_is_not_passed_through_as_words() -> None:
    from symbiote.storage.chroma.process.child import RemoteStoreError

    assert worded(InvalidInputError("x"))
    assert not worded(RemoteStoreError("OSError: disk full", 28))
    assert issubclass(RemoteStoreError, DriverError)
    assert not worded(ValueError("x"))
