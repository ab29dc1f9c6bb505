"""Names that moved to their concept's module (issue 35) still import from where users' notebooks
had them; the engine module and the one renamed function warn before they go."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from toolkit import reconcile
from toolkit.reconcile import _engine, inputs, result, schema, tracking
from toolkit.reconcile.period import restrict_period, select_period


def test_the_old_homes_give_the_same_objects() -> None:
    for name in ("CATEGORIES", "EXCEPTION_COLUMNS", "FX_COLUMNS", "INFO_CATEGORIES", "SUMMARY_COLUMNS"):
        assert getattr(result, name) is getattr(schema, name) is getattr(reconcile, name)
    assert tracking.TRACKING_COLUMNS is schema.TRACKING_COLUMNS is reconcile.TRACKING_COLUMNS
    assert inputs.select_period is select_period is reconcile.select_period


def test_restrict_period_warns_and_selects_the_period(tmp_path: Path) -> None:
    ledger_csv = tmp_path / "ledger.csv"
    ledger_csv.write_text(
        "merchantReferenceId,amount,currency,status,date\n"
        "a,1.00,USD,success,2025-05-01\nb,2.00,USD,success,2025-06-01\n"
    )
    ledger = reconcile.load_ledger(ledger_csv)
    with pytest.warns(DeprecationWarning, match="use toolkit.reconcile.select_period"):
        restricted = restrict_period(ledger, "date", "2025-05-01", "2025-05-31")
    assert restricted == select_period(ledger, "date", "2025-05-01", "2025-05-31")
    assert restricted.period is not None and restricted.period.end == "2025-05-31"


def test_the_engine_module_gives_its_names_with_a_warning() -> None:
    engine = importlib.import_module("toolkit.reconcile.engine")  # importing it alone is quiet
    with pytest.warns(DeprecationWarning, match="import reconcile from toolkit.reconcile$"):
        assert engine.reconcile is _engine.reconcile
    with pytest.warns(DeprecationWarning, match="import HELD_ROWS from toolkit.reconcile.schema$"):
        assert engine.HELD_ROWS is schema.HELD_ROWS
    with pytest.warns(DeprecationWarning, match="import ReconciliationResult from toolkit.reconcile.result"):
        assert engine.ReconciliationResult is result.ReconciliationResult
    with pytest.raises(AttributeError, match="no attribute 'checked_rows'"):
        engine.checked_rows  # noqa: B018  (a step's function was never part of its API)
