"""The package's run-time imports form no circle, and tracking never reaches the engine.

Read from the source (imports at the top and inside functions; ``if TYPE_CHECKING:`` blocks aside,
they never run): a circle is what made importing ``timing.py`` load Ibis, and what makes a module
hard to move (issue 35).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from tests.imports import PACKAGE


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _run_time_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_run_time_nodes(child)])
            continue
        yield node
        yield from _run_time_nodes(node)


def _resolve(name: str) -> str | None:
    """The toolkit module ``name`` names (a module, or a name imported from one)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@cache
def run_time_imports(module: str) -> frozenset[str]:
    """The toolkit modules ``module`` imports when it runs (a package's ``__init__`` aside, which
    every import of a submodule runs first: each is a node of its own)."""
    path = MODULES[module]
    found: set[str] = set()
    for node in _run_time_nodes(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            names = [f"{base}.{alias.name}" for alias in node.names] or [base]
        for name in names:
            target = _resolve(name)
            if target and target != module:
                found.add(target)
    return frozenset(found)


def circles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(run_time_imports(module)):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    return groups


def reached(module: str) -> set[str]:
    """Every toolkit module importing ``module`` runs."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for other in run_time_imports(todo.pop()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def test_no_circle_among_run_time_imports() -> None:
    assert circles() == []


def _package(name: str) -> list[str]:
    """The modules of package ``name``: its ``__init__`` and every module under it."""
    return sorted(module for module in MODULES if module == name or module.startswith(f"{name}."))


def test_tracking_and_the_renderers_never_import_the_engine() -> None:
    """An audit log read, a report written from a result: neither needs the engine, its backends
    or its readers (each module of each package, not only their ``__init__``)."""
    engine = {"toolkit.reconcile.engine"}
    for package in ("_engine", "backends", "sources", "inputs"):
        engine |= set(_package(f"toolkit.reconcile.{package}"))
    tracking, render = _package("toolkit.reconcile.tracking"), _package("toolkit.reconcile.render")
    assert {"toolkit.reconcile.tracking.store", "toolkit.reconcile.render.report"} <= {*tracking, *render}
    assert "toolkit.reconcile.backends.duckdb" in engine and "toolkit.reconcile.sources.rows" in engine
    for module in (*tracking, *render):
        assert not reached(module) & engine, (module, sorted(reached(module) & engine))


def test_the_scan_sees_imports_inside_functions_and_skips_type_checking_blocks(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toolkit.reconcile import engine\n"
        "def f():\n    from toolkit.reconcile.result import CATEGORIES\n"
    )
    nodes = list(_run_time_nodes(ast.parse(source)))
    imported = {n.module for n in nodes if isinstance(n, ast.ImportFrom)}
    assert imported == {"typing", "toolkit.reconcile.result"}
