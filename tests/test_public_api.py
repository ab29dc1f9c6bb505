"""The public API of ``toolkit``: the names it imports lazily, lists in ``__all__`` and types agree."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import toolkit


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of every ``from ... import`` inside ``if TYPE_CHECKING:`` in __init__.py."""
    tree = ast.parse(Path(toolkit.__file__).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                found.update({alias.name: statement.module for alias in statement.names})
    return found


def test_all_is_sorted_and_lists_each_name_once() -> None:
    assert toolkit.__all__ == sorted(set(toolkit.__all__))


def test_all_the_lazy_imports_and_the_typed_imports_name_the_same_things() -> None:
    exports = toolkit._EXPORTS
    assert sorted(exports) == toolkit.__all__
    assert _type_checking_imports() == exports


def test_every_public_name_resolves_to_its_module() -> None:
    for name, module in toolkit._EXPORTS.items():
        value = getattr(toolkit, name)
        assert value is getattr(importlib.import_module(module), name), name


def test_dir_shows_the_public_names_and_anything_else_is_an_attribute_error() -> None:
    assert dir(toolkit) == toolkit.__all__
    unknown = "NoSuchThing"
    with pytest.raises(AttributeError, match="module 'toolkit' has no attribute 'NoSuchThing'"):
        getattr(toolkit, unknown)
