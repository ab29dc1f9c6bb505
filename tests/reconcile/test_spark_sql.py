"""The engine's queries in Spark's dialect (``backends.spark.spark_sql``): transpiled once per
process whatever the numbers of the tables a run keeps, and exactly as sqlglot writes them."""

from __future__ import annotations

import sqlglot

from toolkit.reconcile.backends import spark


def _query(first: int, second: int) -> str:
    return (
        f"SELECT _l.k, LIST_SORT(ARRAY_AGG(_r.v)) AS vs FROM toolkit_kept_{first} AS _l "
        f"JOIN toolkit_ledger_rows_{second} AS _r ON _l.k = _r.k WHERE _l.n <> 'toolkit_kept_{first}' "
        "GROUP BY _l.k"
    )


def test_a_query_sent_again_by_another_run_is_not_transpiled_again() -> None:
    spark._transpiled.cache_clear()
    one, two = spark.spark_sql(_query(3, 4)), spark.spark_sql(_query(17, 21))
    assert spark._transpiled.cache_info().misses == 1
    for query, written in ((_query(3, 4), one), (_query(17, 21), two)):
        assert written == sqlglot.transpile(query, read="duckdb", write="spark")[0]
    assert "toolkit_kept_17" in two and "toolkit_ledger_rows_21" in two and "_p0" not in two


def test_a_query_without_kept_tables_is_written_as_sqlglot_writes_it() -> None:
    query = "SELECT LIST_TRANSFORM([1, 2], lambda x: x + 1) AS y"
    assert spark.spark_sql(query) == sqlglot.transpile(query, read="duckdb", write="spark")[0]
