"""Test-payment scenarios: a CSV of payments with the outcome each should have, and what came back.

A scenario row names its payment the way a person writes it down::

    merchantReferenceId,customer,method,paymentInstrumentId,price,amount,currency,paymentCurrency,expected
    SCN-001,ana@example.com,CARD,pi_test_success,ebook-cookbook/USD,,,,success
    SCN-003,bo@example.com,CARD,pi_test_pending,,25.00,USD,,pending

``customer`` is an e-mail (customerEmail) or the merchant's own customer id (referenceCustomerId);
``price`` is ``SKU/CURRENCY``: the one-time price in that currency of a product created from the
catalog (resolved through the journal, so run catalog setup first); otherwise ``amount`` and
``currency`` (read as text, never float). ``expected`` is success, pending, failure or next_action
(or 1/2/3/5). Optional columns: ``returnUrl`` and any other PaymentRequest field.

The sandbox's outcomes are deterministic (test instruments ``pi_test_*``, test amounts whose minor
units end in 901/902/903/905, and each method's default), so a scenario is a repeatable test.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import InputError, RequestValidationError
from toolkit.frames import prices_frame
from toolkit.journal import Journal
from toolkit.models import PAYMENT_STATUS_LABELS, PAYMENT_STATUS_NAMES, PaymentRequest

SCENARIO_COLUMNS: tuple[str, ...] = ("merchantReferenceId", "customer", "method", "expected")
DEFAULT_RETURN_URL = "https://merchant.example/return"
_STATUS_ALIASES = {str(code): name for code, name in PAYMENT_STATUS_LABELS.items()}
#: Scenario columns that are not PaymentRequest fields.
_OWN_COLUMNS = frozenset({"customer", "method", "price", "expected", "note"})
#: At most this many QR codes are drawn in a notebook (the table lists them all).
MAX_QR_IMAGES = 40


def read_scenario(path: str | Path) -> pd.DataFrame:
    """Read a scenario CSV as text (amounts exact), checking the columns and expected outcomes."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{source}: scenario file not found")
    frame = pd.read_csv(source, dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in SCENARIO_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            f"{source}: column(s) {', '.join(missing)} missing; columns are {', '.join(frame.columns)}"
        )
    frame = frame.apply(lambda column: column.str.strip())
    frame["expected"] = frame["expected"].str.lower().replace(_STATUS_ALIASES)
    for position, row in enumerate(frame.to_dict("records"), start=2):
        if not row["merchantReferenceId"]:
            raise InputError(f"{source}: row {position}: merchantReferenceId is empty")
        if row["expected"] not in PAYMENT_STATUS_NAMES[:4]:
            raise InputError(
                f"{source}: row {position}: expected {row['expected']!r} is not one of "
                "success, pending, failure, next_action (or 1/2/3/5)"
            )
    repeated = frame["merchantReferenceId"][frame["merchantReferenceId"].duplicated()]
    if len(repeated):
        raise InputError(f"{source}: merchantReferenceId {repeated.iloc[0]!r} appears twice")
    scenario = pd.DataFrame(frame)  # a copy keeps no attrs: the source is set on what is returned
    scenario.attrs["source"] = str(source)
    return scenario


def _price_index(journal: Journal) -> dict[tuple[str, str], tuple[str, str]]:
    """(SKU, currency) -> (productId, priceId) of the journal's one-time prices."""
    prices = prices_frame(journal)
    index: dict[tuple[str, str], tuple[str, str]] = {}
    for sku, record in zip(prices.index, prices.to_dict("records"), strict=True):
        row: dict[str, Any] = {str(k): v for k, v in record.items()}
        if row["priceType"] == "one_time" and row["priceId"] is not pd.NA and row["priceId"]:
            index.setdefault((str(sku), str(row["currency"])), (str(row["productId"]), str(row["priceId"])))
    return index


def scenario_requests(scenario: pd.DataFrame, journal: Journal) -> list[PaymentRequest]:
    """The payment requests of a scenario, prices resolved through the journal; errors name the row."""
    source = scenario.attrs.get("source", "scenario")
    prices: dict[tuple[str, str], tuple[str, str]] | None = None
    requests = []
    for position, row in enumerate(scenario.to_dict("records"), start=2):
        where = f"{source}: row {position} ({row['merchantReferenceId']})"
        fields: dict[str, Any] = {str(k): v for k, v in row.items() if k not in _OWN_COLUMNS and v != ""}
        customer = row["customer"]
        if customer:
            fields["customerEmail" if "@" in customer else "referenceCustomerId"] = customer
        fields["paymentMethodType"] = row["method"].upper()
        fields.setdefault("returnUrl", DEFAULT_RETURN_URL)
        if row.get("price"):
            sku, _, currency = str(row["price"]).rpartition("/")
            if prices is None:
                prices = _price_index(journal)
            found = prices.get((sku, currency.upper()))
            if not sku or found is None:
                raise InputError(
                    f"{where}: price {row['price']!r} is not a one-time price of a product "
                    "created from the catalog (write SKU/CURRENCY; run catalog_setup first)"
                )
            fields["productId"], fields["priceId"] = found
        try:
            requests.append(PaymentRequest.build(fields))
        except RequestValidationError as exc:
            raise InputError(f"{where}: {exc}") from None
    return requests


def compare_outcomes(scenario: pd.DataFrame, payments: pd.DataFrame, errors: pd.DataFrame) -> pd.DataFrame:
    """Expected against actual outcome per scenario row; ``ok`` False where they differ.

    A row whose call failed (refused, or outcome unknown) has the error as its ``actual``.
    """
    statuses = {
        str(k): ("" if pd.isna(s) else str(s))
        for k, s in zip(payments.index, payments["status"], strict=True)
    }
    amounts = {
        str(k): f"{a} {c}"
        for k, a, c in zip(payments.index, payments["amount"], payments["currency"], strict=True)
        if a is not None and not pd.isna(c)
    }
    failed = {
        str(k): f"{stage}: {error}"
        for k, stage, error in zip(
            errors["merchantReferenceId"], errors["stage"], errors["error"], strict=True
        )
    }
    rows = []
    for row in scenario.to_dict("records"):
        key = row["merchantReferenceId"]
        actual = statuses.get(key) or ("error" if key in failed else "not sent")
        rows.append(
            {
                "merchantReferenceId": key,
                "method": row["method"].upper(),
                "expected": row["expected"],
                "actual": actual,
                "charged": amounts.get(key, ""),
                "ok": actual == row["expected"],
                "detail": failed.get(key, ""),
            }
        )
    return pd.DataFrame(rows).set_index("merchantReferenceId")


def mismatch_message(comparison: pd.DataFrame) -> str | None:
    """A one-line failure message naming the rows whose outcome differs, or None when all agree."""
    wrong = comparison[~comparison["ok"]]
    if wrong.empty:
        return None
    listed = ", ".join(
        f"{key} expected {r['expected']} got {r['actual']}" for key, r in list(wrong.iterrows())[:10]
    )
    more = f" and {len(wrong) - 10} more" if len(wrong) > 10 else ""
    return f"{len(wrong)} of {len(comparison)} outcomes differ from the scenario: {listed}{more}"


def outcomes_by_method(payments: pd.DataFrame) -> pd.DataFrame:
    """Counts of payments per method (rows) and status (columns), every status shown."""
    frame = payments[payments["status"].notna()]
    table = pd.crosstab(frame["paymentMethodType"].astype(str), frame["status"], dropna=False)
    return table.reindex(columns=list(PAYMENT_STATUS_NAMES), fill_value=0).rename_axis(
        index="paymentMethodType", columns="status"
    )


def next_actions(payments: pd.DataFrame) -> pd.DataFrame:
    """Payments waiting for the customer: what to open, how, and until when."""
    rows = []
    for key, row in zip(payments.index, payments.to_dict("records"), strict=True):
        action = row["action"] if isinstance(row["action"], Mapping) else None
        if action is None:
            continue
        wallet = action.get("walletHandleRedirectOrDisplayQrCode") or {}
        expires = wallet.get("expiresAt")
        rows.append(
            {
                "merchantReferenceId": str(key),
                "paymentMethodType": row["paymentMethodType"],
                "amount": f"{row['amount']} {row['currency']}",
                "actionMethod": action.get("method"),
                "redirectUrl": action.get("redirectUrl"),
                "mobileAuthUrl": wallet.get("mobileAuthUrl"),
                "qrCode": bool(wallet),
                "expiresAt": pd.Timestamp(int(expires), unit="s", tz="UTC") if expires else pd.NaT,
            }
        )
    columns = [
        "merchantReferenceId",
        "paymentMethodType",
        "amount",
        "actionMethod",
        "redirectUrl",
        "mobileAuthUrl",
        "qrCode",
        "expiresAt",
    ]
    return pd.DataFrame(rows, columns=columns).set_index("merchantReferenceId")


def _data_url_png(value: object) -> bytes | None:
    if isinstance(value, str) and value.startswith("data:image/png;base64,"):
        try:
            return base64.b64decode(value.split(",", 1)[1], validate=True)
        except ValueError:
            return None
    return None


def qr_png(action: Mapping[str, Any], *, scale: int = 4) -> bytes | None:
    """The QR code of a wallet action as PNG bytes.

    The image the service sent as a data URL when there is one (``imageDataUrl``, else
    ``imageUrlPng``, which may hold Base64); otherwise a QR drawn with segno from the URL the
    customer's app would open (``mobileAuthUrl``, else ``redirectUrl``). Image URLs are never
    fetched. None when the action has nothing to scan.
    """
    wallet = action.get("walletHandleRedirectOrDisplayQrCode") or {}
    if not wallet:
        return None
    for name in ("imageDataUrl", "imageUrlPng"):
        png = _data_url_png(wallet.get(name))
        if png is not None:
            return png
    target = wallet.get("mobileAuthUrl") or action.get("redirectUrl") or wallet.get("fallbackUrl")
    if not target:
        return None
    import segno

    buffer = io.BytesIO()
    segno.make(str(target), error="m").save(buffer, kind="png", scale=scale, border=2)
    return buffer.getvalue()


def show_qr_codes(payments: pd.DataFrame, *, limit: int = MAX_QR_IMAGES) -> int:
    """Display the QR code of each wallet payment waiting for the customer; returns how many."""
    import importlib

    ipd: Any = importlib.import_module("IPython.display")
    display, Image, Markdown = ipd.display, ipd.Image, ipd.Markdown
    shown = 0
    for key, row in zip(payments.index, payments.to_dict("records"), strict=True):
        action = row["action"] if isinstance(row["action"], Mapping) else None
        png = qr_png(action) if action is not None else None
        if png is None:
            continue
        if shown >= limit:
            display(Markdown(f"... more QR codes not drawn (limit {limit}); see the table above."))
            break
        display(Markdown(f"**{key}**: {row['paymentMethodType']} {row['amount']} {row['currency']}"))
        display(Image(data=png, format="png", width=160))
        shown += 1
    if not shown:
        display(Markdown("No wallet payment is waiting for a QR scan."))
    return shown


__all__ = [
    "DEFAULT_RETURN_URL",
    "SCENARIO_COLUMNS",
    "compare_outcomes",
    "mismatch_message",
    "next_actions",
    "outcomes_by_method",
    "qr_png",
    "read_scenario",
    "scenario_requests",
    "show_qr_codes",
]
