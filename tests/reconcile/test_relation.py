"""A stage is written into the select before it when it reads nothing that select computes, and
the query then gives the same rows as one select per stage."""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pytest

from toolkit.reconcile.relation import Relation

BASE = Relation(
    "SELECT * FROM (VALUES (1, '7', 'a'), (2, 'x', 'b'), (3, '9', 'c'), (4, '2', 'd'), (5, '5', 'e')) "
    "AS t(x, t, k)",
    ("x", "t", "k"),
)

Stage = Callable[[Relation], Relation]


def rows(relation: Relation) -> list[tuple[object, ...]]:
    with duckdb.connect() as con:
        return sorted(con.sql(str(relation)).fetchall(), key=repr)


def staged(stages: list[Stage], *, apart: bool) -> Relation:
    """``stages`` over ``BASE``; ``apart``, each in a select of its own (the query before each
    stage taken as an opaque one)."""
    relation = BASE
    for stage in stages:
        relation = stage(Relation(str(relation), relation.columns) if apart else relation)
    return relation


def depth(relation: Relation) -> int:
    return str(relation).count("FROM (")


def test_stages_reading_only_columns_passed_through_are_one_select() -> None:
    stages: list[Stage] = [
        lambda r: r.mutate(double="x * 2"),
        lambda r: r.mutate(upper="upper(k)", t="trim(t)"),
        lambda r: r.rename({"key": "k"}),
        lambda r: r.drop("upper"),
        lambda r: r.filter("x > 1"),
    ]
    together, apart = staged(stages, apart=False), staged(stages, apart=True)
    assert depth(together) == 2 and depth(apart) == 6  # BASE's own subquery, then one a stage
    assert together.columns == apart.columns == ("x", "t", "key", "double")
    assert (
        rows(together)
        == rows(apart)
        == [(2, "x", "b", 4), (3, "9", "c", 6), (4, "2", "d", 8), (5, "5", "e", 10)]
    )


def test_a_stage_reading_a_computed_column_is_a_select_of_its_own() -> None:
    stages: list[Stage] = [
        lambda r: r.mutate(n="TRY_CAST(t AS INTEGER)"),
        lambda r: r.mutate(m="n + x", x="x * 10"),  # reads n: a select of its own
        lambda r: r.rename({"total": "m"}),
        lambda r: r.mutate(big="total > 10"),  # reads the renamed column
    ]
    together, apart = staged(stages, apart=False), staged(stages, apart=True)
    assert depth(together) == 4
    assert rows(together) == rows(apart)
    assert (10, "7", "a", 7, 8, False) in rows(together)


@pytest.mark.parametrize(
    "stages",
    [
        # The rows a window numbers are those before the filter that follows it.
        [lambda r: r.mutate(n="ROW_NUMBER() OVER (ORDER BY x)"), lambda r: r.filter("x > 2")],
        # A second filter never joins the first: it may not be read before it (a cast that fails).
        [
            lambda r: r.filter("TRY_CAST(t AS INTEGER) IS NOT NULL"),
            lambda r: r.filter("CAST(t AS INTEGER) > 4"),
        ],
    ],
    ids=["window", "filters"],
)
def test_a_filter_that_would_change_what_came_before_is_applied_after_it(stages: list[Stage]) -> None:
    together, apart = staged(stages, apart=False), staged(stages, apart=True)
    assert depth(together) == 3
    assert rows(together) == rows(apart)
