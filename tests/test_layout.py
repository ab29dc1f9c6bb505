"""The reconciliation package stays in modules a reader can hold, and functions one can read.

Issue 35 split a package of 17 files (one of 1,582 lines, steps of 372 and 529) by concept; these
limits keep it so as movements and bank statements land in it: no module of the package over 600
lines, and no function of the toolkit over 60 lines unless a comment just above it says why
(``# Long: ...``, for a declaration read top to bottom, such as an argument parser's).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.imports import PACKAGE

MODULE_LINES = 600
FUNCTION_LINES = 60
REASON = "# Long:"


def long_modules(root: Path) -> list[str]:
    """Modules under ``root`` of more than ``MODULE_LINES`` lines, with their length."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > MODULE_LINES:
            found.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return found


def long_functions(root: Path) -> list[str]:
    """Functions under ``root`` of more than ``FUNCTION_LINES`` lines with no reason above them."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            if length > FUNCTION_LINES and not above.startswith(REASON):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_module_of_the_reconciliation_package_passes_600_lines() -> None:
    assert long_modules(PACKAGE / "reconcile") == []


def test_no_function_passes_60_lines_without_a_reason() -> None:
    assert long_functions(PACKAGE) == []


def test_the_limits_see_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    """The checks fail where they should: a module one line too long, a function one line too long
    without a reason, and pass the same function with its reason."""
    root = tmp_path / "pkg"
    root.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    (root / "long.py").write_text(f"def f() -> None:\n{body}\n" + "\n" * (MODULE_LINES - FUNCTION_LINES))
    (root / "reasoned.py").write_text(f"{REASON} a table read top to bottom\ndef g() -> None:\n{body}\n")
    assert long_modules(root) == [f"pkg/long.py: {MODULE_LINES + 1} lines"]
    assert long_functions(root) == [f"pkg/long.py:1 f: {FUNCTION_LINES + 1} lines"]
