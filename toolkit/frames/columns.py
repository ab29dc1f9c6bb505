"""Column builders: one list of Python values in, one typed pandas column out.

Text is Arrow-backed, integers and booleans are nullable masked arrays, times are UTC, amounts are
``Decimal`` objects beside exact integer minor units. pyarrow does the conversions in C, which keeps
building 100,000 rows fast; every builder of ``toolkit.frames`` goes through these.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa_arrow
import pyarrow.compute as pc

from toolkit.errors import FrameError
from toolkit.money import minor_digits

#: The dtype of every text column.
STRING = pd.StringDtype("pyarrow")
#: The index of every frame: the API's business key.
KEY = "merchantReferenceId"


def strings(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    """Arrow-backed text, built by pyarrow straight from the Python strings (None -> NA)."""
    return pd.arrays.ArrowStringArray(pa_arrow.array(values, type=pa_arrow.large_string()))


def _nullable(values: Any, kind: Any, fill: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Values and missing-mask as numpy arrays, converted by pyarrow (None -> masked)."""
    array = values if isinstance(values, pa_arrow.Array) else pa_arrow.array(values, type=kind)
    mask = array.is_null().to_numpy(zero_copy_only=False)
    return array.fill_null(fill).to_numpy(zero_copy_only=False, writable=True), mask


def ints(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    """Nullable Int64 (None -> NA), never through float."""
    data, mask = _nullable(values, pa_arrow.int64(), 0)
    return pd.arrays.IntegerArray(data, mask)


def bools(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    """Nullable booleans (None -> NA)."""
    data, mask = _nullable(values, pa_arrow.bool_(), False)
    return pd.arrays.BooleanArray(data, mask)


def times(values: Sequence[Any]) -> pd.DatetimeIndex:
    """Milliseconds since the epoch -> UTC datetimes (None -> NaT)."""
    data, mask = _nullable(values, pa_arrow.int64(), 0)
    data[mask] = np.iinfo(np.int64).min  # NaT
    return pd.DatetimeIndex(data.view("datetime64[ms]")).tz_localize("UTC")


def objects(values: Sequence[Any]) -> np.ndarray[Any, Any]:
    """Python objects kept as they are: Decimals (exact amounts), dicts (actions, localized names)."""
    return np.fromiter(values, dtype=object, count=len(values))


def minor_units(
    amounts: Sequence[Decimal | None], currencies: Sequence[str | None], keys: Sequence[str | None]
) -> pd.api.extensions.ExtensionArray:
    """The money column of every frame: exact integer minor units (Int64), never float.

    An amount finer than its currency allows is an error naming the key, not rounded. The common
    case is vectorised in pyarrow; anything it refuses goes through the exact row-by-row path.
    """
    try:
        return _minor_arrow(amounts, currencies)
    except (pa_arrow.ArrowException, TypeError, ValueError, OverflowError):
        return _minor_exact(amounts, currencies, keys)  # names the offending key, or copes with size


def _minor_arrow(
    amounts: Sequence[Decimal | None], currencies: Sequence[str | None]
) -> pd.api.extensions.ExtensionArray:
    """Vectorised: every amount as decimal128 at the finest scale present, then divided per row.

    Raises (the caller then takes the row-by-row path) if an amount has more decimals than the
    finest currency present allows, does not fit, or is not whole in its own currency's minor unit.
    """
    codes = pa_arrow.array(currencies, type=pa_arrow.string()).dictionary_encode()
    digits_of = np.array([minor_digits(c) for c in codes.dictionary.to_pylist()] or [0], dtype=np.int64)
    finest = int(digits_of.max())
    scaled = pc.multiply(
        pa_arrow.array(amounts, type=pa_arrow.decimal128(30, finest)),
        pa_arrow.scalar(Decimal(10**finest), type=pa_arrow.decimal128(finest + 1, 0)),
    )
    data, mask = _nullable(pc.cast(scaled, pa_arrow.int64()), None, 0)
    mask |= codes.is_null().to_numpy(zero_copy_only=False)
    divisor = 10 ** (finest - digits_of[codes.indices.fill_null(0).to_numpy(zero_copy_only=False)])
    if np.any((data % divisor != 0) & ~mask):
        raise ValueError("an amount is finer than its currency allows")
    data //= divisor
    data[mask] = 0
    return pd.arrays.IntegerArray(data, mask)


def _minor_exact(
    amounts: Sequence[Decimal | None], currencies: Sequence[str | None], keys: Sequence[str | None]
) -> pd.api.extensions.ExtensionArray:
    out: list[int | None] = []
    digits_of: dict[str, int] = {}
    for amount, currency, key in zip(amounts, currencies, keys, strict=True):
        if amount is None or currency is None:
            out.append(None)
            continue
        digits = digits_of.get(currency)
        if digits is None:
            digits = digits_of[currency] = minor_digits(currency)
        scaled = amount.scaleb(digits)
        whole = int(scaled)
        if whole != scaled:
            raise FrameError(f"{KEY} {key!r}: {amount} {currency} has more decimals than {currency} allows")
        out.append(whole)
    return ints(out)


def amounts(values: Sequence[Any]) -> list[Decimal | None]:
    """Amounts as exact Decimals: JSON writes whole amounts (13500 KRW) as integers."""
    return [None if v is None else v if isinstance(v, Decimal) else Decimal(v) for v in values]


def keyed(columns: dict[str, Any], keys: Sequence[str | None]) -> pd.DataFrame:
    """The frame of ``columns`` indexed by ``keys`` as Arrow text named ``merchantReferenceId``."""
    return pd.DataFrame(columns, index=pd.Index(strings(keys), name=KEY))


_CHUNK = 2048


def fields(models: Sequence[Any], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """Fields of many models, one list per name.

    Each model is visited once (one C-level ``attrgetter`` call fetching all names) instead of once
    per field: with 100,000 models spread over memory, the visits, not the work, are the cost. The
    per-model tuples are transposed a chunk at a time so that few of them are alive at once (else
    they push the garbage collector into full collections over all the models).
    """
    get = operator.attrgetter(*names)  # two names or more: always a tuple
    columns: list[list[Any]] = [[] for _ in names]
    for start in range(0, len(models), _CHUNK):
        rows = zip(*map(get, models[start : start + _CHUNK]), strict=True)
        for column, values in zip(columns, rows, strict=True):
            column.extend(values)
    return dict(zip(names, columns, strict=True))
