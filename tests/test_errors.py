"""Every error the package raises is defined in ``toolkit.errors`` and drawn in its docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import toolkit
from toolkit import errors
from toolkit.errors import ToolkitError


def _toolkit_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(toolkit.__path__, prefix="toolkit."))


def _drawn() -> dict[str, int]:
    """Class name -> its depth in the docstring's tree (0 for the root)."""
    depths = {}
    for line in (errors.__doc__ or "").splitlines():
        found = re.match(r"^\s*([│ ]*)(?:[├└]── )?([A-Z]\w+)", line)
        if found and found.group(2).endswith(("Error", "Failure")):
            depths[found.group(2)] = 0 if "──" not in line else 1 + len(found.group(1)) // 4
    return depths


def test_every_toolkit_error_is_defined_in_errors() -> None:
    elsewhere = []
    for name in _toolkit_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, ToolkitError)
                and value.__module__ != "toolkit.errors"
            ):
                elsewhere.append(f"{value.__module__}.{value.__qualname__}")
    assert elsewhere == []


def test_the_docstring_draws_every_error_under_its_parent() -> None:
    classes = {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, ToolkitError)
    }
    drawn = _drawn()
    assert sorted(drawn) == sorted(classes)
    for name, cls in classes.items():
        parent = next((b for b in cls.__bases__ if issubclass(b, ToolkitError)), None)
        expected = 0 if parent is None else drawn[parent.__name__] + 1
        assert drawn[name] == expected, name


def test_the_errors_are_exported_at_the_top() -> None:
    exported = {name for name in toolkit.__all__ if name.endswith(("Error", "Failure"))}
    assert exported == {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, ToolkitError)
    }
