"""A package's names imported on first use (PEP 562), so that importing the package loads nothing
heavy: ``toolkit``, ``toolkit.reconcile`` and its ``render`` and ``tracking`` packages give their
public names this way, and a command that reads no payments loads neither pandas nor DuckDB."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, exports: Mapping[str, str | tuple[str, str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name of ``exports`` comes from its
    module (a full name, or one under ``package``; with the attribute's own name there when it
    differs), imported on first use and then kept in the package like any other name."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        found = exports.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (found, name) if isinstance(found, str) else found
        full = module if module.startswith("toolkit.") else f"{package}.{module}"
        value = getattr(importlib.import_module(full), attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", exports))

    return __getattr__, __dir__
