"""docs/reference/categories-and-columns.md against ``toolkit.reconcile.schema``, so the two never drift.

Each table of the page sits under a heading naming what it documents (``### Payment categories``,
``### exceptions.csv``, ...) and lists, in its first cell, one name as a code span per row. Each
such table must hold exactly the names of its schema tuple, in the tuple's order; a category's row
must give its severity as ``severity_of`` does. A table of names under a heading this test does not
know fails too, so the page names no category or column that the schema does not have.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.reconcile import schema

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "categories-and-columns.md"

#: Each table's heading, and the schema tuple its rows must name, in order.
TABLES: dict[str, tuple[str, ...]] = {
    "Payment categories": schema.PAYMENT_CATEGORIES,
    "Subscription categories": schema.SUBSCRIPTION_CATEGORIES,
    "Informational categories": schema.INFO_CATEGORIES,
    "exceptions.csv": schema.EXCEPTION_COLUMNS,
    "Columns a tracked run adds": schema.TRACKING_COLUMNS,
    "summary.csv": schema.SUMMARY_COLUMNS,
    "matched": schema.MATCHED_COLUMNS,
    "fx.csv": schema.FX_COLUMNS,
    "payouts.csv": schema.PAYOUT_TOTAL_COLUMNS,
}
CATEGORY_TABLES = ("Payment categories", "Subscription categories", "Informational categories")

HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
#: A table row whose first cell is one code span: ``| `amount_mismatch` | exception | ... |``.
NAME_ROW = re.compile(r"^\|\s*`([^`|]+)`\s*\|(.*)\|\s*$")

Tables = dict[str, list[tuple[str, list[str]]]]


def _read_page() -> tuple[Tables, list[str]]:
    """The page's tables of names, by heading (each row: its name and its other cells), and the
    lines that name something under no heading at all."""
    tables: Tables = {}
    orphans: list[str] = []
    heading: str | None = None
    fenced = False
    for number, line in enumerate(PAGE.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if match := HEADING.match(line):
            heading = match[1].strip("`")
        elif row := NAME_ROW.match(line):
            cells = [cell.strip() for cell in row[2].split("|")]
            if heading is None:
                orphans.append(f"categories-and-columns.md:{number}: {row[1]} under no heading")
            else:
                tables.setdefault(heading, []).append((row[1], cells))
    return tables, orphans


@pytest.fixture(scope="module")
def tables() -> Tables:
    found, orphans = _read_page()
    assert not orphans, "\n".join(orphans)
    return found


def test_the_tables_are_found(tables: Tables) -> None:
    """A parser that found nothing would make every other test pass."""
    assert sum(len(rows) for rows in tables.values()) >= sum(len(names) for names in TABLES.values())


@pytest.mark.parametrize("heading", list(TABLES))
def test_each_table_names_its_schema_tuple(tables: Tables, heading: str) -> None:
    expected = TABLES[heading]
    assert heading in tables, f"categories-and-columns.md has no table under a heading '{heading}'"
    named = [name for name, _ in tables[heading]]
    missing = [name for name in expected if name not in named]
    unknown = [name for name in named if name not in expected]
    repeated = sorted({name for name in named if named.count(name) > 1})
    assert not missing, f"{heading}: in the schema, not on the page: {', '.join(missing)}"
    assert not unknown, f"{heading}: on the page, not in the schema: {', '.join(unknown)}"
    assert not repeated, f"{heading}: named twice: {', '.join(repeated)}"
    assert named == list(expected), f"{heading}: not in the schema's order: {', '.join(expected)}"


def test_no_table_outside_the_schema(tables: Tables) -> None:
    """Names under a heading that documents no schema tuple are names the schema may not have."""
    stray = {heading: [name for name, _ in rows] for heading, rows in tables.items() if heading not in TABLES}
    assert not stray, f"tables of names the test does not check against the schema: {stray}"


def test_every_category_gives_its_severity(tables: Tables) -> None:
    wrong = [
        f"{name}: {cells[0] if cells else '(none)'}, not {schema.severity_of(name)}"
        for heading in CATEGORY_TABLES
        for name, cells in tables.get(heading, [])
        if not cells or cells[0] != schema.severity_of(name)
    ]
    assert not wrong, "severity on the page differs from schema.severity_of:\n" + "\n".join(wrong)


def test_every_row_says_what_it_is(tables: Tables) -> None:
    silent = [
        f"{heading}: {name}"
        for heading, rows in tables.items()
        for name, cells in rows
        if not any(cells) or not cells[-1]
    ]
    assert not silent, "rows without a description:\n" + "\n".join(silent)
