"""The sandbox's layout, read from its imports: routes are thin and stand alone; the rules are not HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.imports import PACKAGE, toolkit_imports

ROUTES = sorted((PACKAGE / "sandbox" / "routes").glob("*.py"))
#: The service's rules, computed on stored rows; the routes parse, call them and answer.
RULES = ("billing.py", "charging.py", "pricing.py", "rules.py", "store.py", "db.py", "checkout.py")


@pytest.mark.parametrize("route", ROUTES, ids=lambda path: path.name)
def test_no_route_module_imports_another(route: Path) -> None:
    assert sorted(name for name in toolkit_imports(route) if name.startswith("toolkit.sandbox.routes")) == []


@pytest.mark.parametrize("module", [m for m in RULES if (PACKAGE / "sandbox" / m).exists()])
def test_the_rules_know_nothing_of_http_frameworks(module: str) -> None:
    text = (PACKAGE / "sandbox" / module).read_text()
    assert "fastapi" not in text and "starlette" not in text
    assert not any(
        name.startswith("toolkit.sandbox.routes") for name in toolkit_imports(PACKAGE / "sandbox" / module)
    )
