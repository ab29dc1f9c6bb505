"""Deprecated: the engine's steps are modules of ``toolkit.reconcile._engine`` now (issue 35).

``reconcile`` is ``toolkit.reconcile.reconcile`` (or ``toolkit.reconcile._engine.reconcile``, the
engine without tracking); the categories, columns and limits are ``toolkit.reconcile.schema``'s.
This module gives the names it had for one release; each, when used, warns with a
``DeprecationWarning`` saying where it lives now.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

#: Each name this module had: (the module it lives in now, its name there).
_MOVED: dict[str, tuple[str, str]] = {
    "reconcile": ("toolkit.reconcile._engine", "reconcile"),
    "ReconciliationResult": ("toolkit.reconcile.result", "ReconciliationResult"),
    "RowCounts": ("toolkit.reconcile.result", "RowCounts"),
    "SideTotal": ("toolkit.reconcile.result", "SideTotal"),
    "_decimals": ("toolkit.reconcile.result", "_decimals"),
    **{
        name: ("toolkit.reconcile.schema", name)
        for name in (
            "CATEGORIES",
            "EXCEPTION_COLUMNS",
            "HELD_ROWS",
            "PAYMENT_CATEGORIES",
            "PREVIEW_ROWS",
            "SUBSCRIPTION_CATEGORIES",
            "SUMMARY_COLUMNS",
        )
    },
}

__all__ = sorted(_MOVED)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _MOVED[name]
    public = "toolkit.reconcile" if name == "reconcile" else module
    warnings.warn(
        f"toolkit.reconcile.engine is deprecated and goes in the next release: import {name} from {public}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), attribute)
