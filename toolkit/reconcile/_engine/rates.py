"""Step 3, across currencies: the keys in two currencies decided at the reference rates of their
day (``fx.py``), in Python: they are few, and a rate is looked up by day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import pyarrow as pa

from toolkit.money import from_minor
from toolkit.reconcile._engine.model import CLASSIFIED, Rules, select
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.fx import Rates
from toolkit.reconcile.inputs import (
    currency_codes,
)
from toolkit.reconcile.movements import shown
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.schema import (
    FX_COLUMNS,
)
from toolkit.reconcile.tolerance import Tolerance


@dataclass(frozen=True)
class FxDecisions:
    """The comparisons at reference rates: the per-payment frame (``FX_COLUMNS``) and every
    rate that was needed and missing."""

    frame: pd.DataFrame
    missing: tuple[str, ...] = ()


#: ``fx_state`` codes: compared exactly, within tolerance, beyond it, no rate or no date.
_FX_EXACT, _FX_WITHIN, _FX_BEYOND, _FX_NO_RATE = 0, 1, 2, 3


def _at_rates(
    rows: list[dict[str, Any]], rates: Rates, tolerance: Tolerance
) -> tuple[list[tuple[str, int, int, str]], list[dict[str, Any]], set[str]]:
    """Each key at the rate of its day: the decisions of the ``fx_check`` keys (key, state,
    expected minor units, the rate or the missing one in words), the FX section's lines, and
    the rates that were missing."""
    codes = currency_codes()
    decided: list[tuple[str, int, int, str]] = []
    lines: list[dict[str, Any]] = []
    missing: set[str] = set()
    for row in rows:
        base, quote = codes[int(row["l_cur"])], codes[int(row["p_cur"])]
        seconds = row["p_when"] if row["p_when"] is not None else row["l_when"]
        day = None if seconds is None else datetime.fromtimestamp(int(seconds), UTC).date()
        conversion = None if day is None else rates.convert(int(row["l_minor"]), base, quote, day)
        if conversion is None or day is None:
            if row["fx_check"]:  # a price match needs no rate: nothing is missing then
                text = _no_rate_text(rates, base, quote, day)
                missing.update([text] if day is not None else [])
                decided.append((row["key"], _FX_NO_RATE, 0, text))
            continue
        variance = int(row["p_minor"]) - conversion.expected_minor
        if row["fx_check"]:
            state = _fx_state(tolerance, variance, conversion.expected_minor, quote)
            decided.append(
                (row["key"], state, conversion.expected_minor, f"{conversion.rate_text()} on {day}")
            )
            category = ("matched", "within_tolerance", "amount_mismatch")[state]
        else:  # matched (or not) through its price: its outcome is the price's
            flags = ("amount_mismatch", "within_tolerance")
            category = next((name for name in flags if row[name]), "matched")
        lines.append(
            {
                "merchantReferenceId": shown(row["key"]),
                "date": day,
                "ledger_amount": from_minor(int(row["l_minor"]), base),
                "ledger_currency": base,
                "rate": conversion.rate_text(),
                "expected_amount": from_minor(conversion.expected_minor, quote),
                "charged_amount": from_minor(int(row["p_minor"]), quote),
                "charged_currency": quote,
                "variance": from_minor(variance, quote),
                "category": category,
            }
        )
    return decided, lines, missing


def _no_rate_text(rates: Rates, base: str, quote: str, day: date | None) -> str:
    """Why a payment in two currencies could not be compared, in words."""
    if day is None:
        return f"no date to take a {base}/{quote} rate for"
    return rates.missing_text(base, quote, day)


def _fx_state(tolerance: Tolerance, variance: int, expected: int, currency: str) -> int:
    """``_FX_EXACT``, ``_FX_WITHIN`` or ``_FX_BEYOND`` the tolerance of the expected amount."""
    if variance == 0:
        return _FX_EXACT
    return _FX_WITHIN if tolerance.allows(variance, expected, currency) else _FX_BEYOND


def resolve_fx(engine: Backend, flagged: Kept, rules: Rules) -> tuple[Relation, FxDecisions]:
    """Decide the keys in two currencies (``fx_check``) at the reference rate of the payment's
    day (the processor's ``createTime``, else the ledger's date), exactly, in Python (``fx.py``;
    few keys by nature): matched, ``within_tolerance``, ``amount_mismatch``, or
    ``currency_mismatch`` when there is no rate. The decisions go back into the flags. The
    payments matched through their price are compared at the rate too, for the FX section only
    (what the conversion cost); their outcome stays the price's."""
    empty = FxDecisions(pd.DataFrame({c: [] for c in FX_COLUMNS}))
    nothing = Relation(f"SELECT * FROM {flagged}", CLASSIFIED, (flagged,)).mutate(
        fx_state="CAST(NULL AS TINYINT)", fx_expected="CAST(NULL AS BIGINT)", fx_text="CAST(NULL AS VARCHAR)"
    )
    if rules.rates is None:
        return nothing, empty
    columns = ("key", "l_minor", "l_cur", "p_minor", "p_cur", "p_when", "l_when", "fx_check")
    table = engine.arrow(
        select([*columns, "amount_mismatch", "within_tolerance"], str(flagged), "fx_check OR price_match")
        + " ORDER BY key"
    )
    if not table.num_rows:
        return nothing, empty
    decided, lines, missing = _at_rates(table.to_pylist(), rules.rates, rules.tolerance)
    if not decided:
        return nothing, FxDecisions(pd.DataFrame(lines, columns=list(FX_COLUMNS)))
    outcome = engine.register(
        pa.table(
            {
                "_fx_key": [d[0] for d in decided],
                "fx_state": pa.array([d[1] for d in decided], pa.int8()),
                "fx_expected": pa.array([d[2] for d in decided], pa.int64()),
                "fx_text": [d[3] for d in decided],
            }
        ),
        stem="fx",
    )
    decisions = {
        "currency_mismatch": f"currency_mismatch OR COALESCE(fx_state = {_FX_NO_RATE}, FALSE)",
        "amount_mismatch": f"amount_mismatch OR COALESCE(fx_state = {_FX_BEYOND}, FALSE)",
        "within_tolerance": f"within_tolerance OR COALESCE(fx_state = {_FX_WITHIN}, FALSE)",
    }
    decided_keys = Relation(f"SELECT * FROM {flagged}", CLASSIFIED, (flagged,)).left_join(
        outcome,
        "_s.key = _j._fx_key",
        fx_state="_j.fx_state",
        fx_expected="_j.fx_expected",
        fx_text="_j.fx_text",
    )
    frame = pd.DataFrame(lines, columns=list(FX_COLUMNS))
    return decided_keys.mutate(**decisions), FxDecisions(frame, tuple(sorted(missing)))
