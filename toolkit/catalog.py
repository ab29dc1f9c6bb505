"""Catalog files -> product requests keyed by the merchant's SKU, and a plan of what a run would do.

A catalog is YAML (one entry per product, the API's own field names plus ``merchantReferenceId``)
or CSV (one row per price; product fields repeat on each of its rows). Amounts are read as written,
never through float. See docs/client.md, "Catalog files", and ``notebooks/data/catalog.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from toolkit.errors import InputError, RequestValidationError
from toolkit.journal import SENDABLE_STATES, Journal, request_hash
from toolkit.models import ProductRequest

PRODUCT_FIELDS = ("name", "localizedNames", "description", "image", "taxCategory", "defaultPrice")
PRICE_FIELDS = ("currency", "unitAmount", "priceType", "isDefaultPrice", "currencyOptions")
RECURRING_FIELDS = ("interval", "intervalCount", "trialPeriodDays", "pricingModel")


@dataclass(frozen=True)
class CatalogEntry:
    """One product of a catalog: its SKU, the request that creates it, and where it was written."""

    merchantReferenceId: str
    request: ProductRequest
    source: str


class _DecimalLoader(yaml.SafeLoader):
    """YAML whose non-integer numbers become exact Decimals (``9.99`` is not a float here)."""


_DecimalLoader.add_constructor(
    "tag:yaml.org,2002:float",
    lambda loader, node: Decimal(str(loader.construct_scalar(node))),  # type: ignore[arg-type]
)


#: What a catalog can be read from: a YAML or CSV file, a frame of price rows, or product dicts.
CatalogSource = str | Path | pd.DataFrame | Sequence[Mapping[str, Any]]


def load_catalog(source: CatalogSource) -> list[CatalogEntry]:
    """Read a catalog (YAML, CSV, a frame of price rows, or a list of product dicts)."""
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise InputError(f"{path}: catalog file not found")
        if path.suffix.lower() in (".yaml", ".yml"):
            return _from_products(_read_yaml(path), str(path))
        if path.suffix.lower() == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            return _from_price_rows(frame, str(path), first_row=2)
        raise InputError(f"{path}: a catalog is .yaml, .yml or .csv")
    if isinstance(source, pd.DataFrame):
        return _from_price_rows(source.astype(object).where(source.notna(), ""), "frame", first_row=0)
    return _from_products(list(source), "list")


def _read_yaml(path: Path) -> list[Mapping[str, Any]]:
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_DecimalLoader)  # noqa: S506
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from None
    products = document.get("products") if isinstance(document, dict) else document
    if not isinstance(products, list):
        raise InputError(f"{path}: expected a list of products (or a 'products:' key holding one)")
    return products


def _entry(data: Mapping[str, Any], where: str) -> CatalogEntry:
    fields = dict(data)
    key = str(fields.pop("merchantReferenceId", "") or "").strip()
    if not key:
        raise InputError(f"{where}: merchantReferenceId is required (the product's SKU)")
    try:
        request = ProductRequest.build(fields)
    except RequestValidationError as exc:
        raise InputError(f"{where} ({key}): {exc}") from None
    return CatalogEntry(merchantReferenceId=key, request=request, source=where)


def _from_products(products: Sequence[Mapping[str, Any]], origin: str) -> list[CatalogEntry]:
    entries = []
    for position, product in enumerate(products, start=1):
        if not isinstance(product, Mapping):
            raise InputError(f"{origin}: product {position} is not a mapping")
        entries.append(_entry(product, f"{origin}: product {position}"))
    return _unique(entries)


def _pairs(text: str, where: str, column: str) -> dict[str, str] | None:
    """``de=Kochbuch;ja=料理本`` -> ``{"de": "Kochbuch", "ja": "料理本"}``."""
    if not text.strip():
        return None
    pairs = {}
    for part in text.split(";"):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise InputError(f"{where}: {column} must look like 'a=1;b=2', got {text!r}")
        pairs[name.strip()] = value.strip()
    return pairs


def _from_price_rows(frame: pd.DataFrame, origin: str, *, first_row: int) -> list[CatalogEntry]:
    if "merchantReferenceId" not in frame.columns:
        raise InputError(f"{origin}: column merchantReferenceId is missing")
    products: dict[str, dict[str, Any]] = {}
    first_seen: dict[str, str] = {}
    for position, row in enumerate(frame.to_dict("records")):
        where = f"{origin}: row {position + first_row}"
        cells = {str(k): str(v).strip() for k, v in row.items() if str(v).strip() != ""}
        key = cells.get("merchantReferenceId", "")
        if not key:
            raise InputError(f"{where}: merchantReferenceId is required")
        product = products.setdefault(key, {"merchantReferenceId": key, "priceList": []})
        first_seen.setdefault(key, where)
        for name in PRODUCT_FIELDS:
            if name in cells:
                value: Any = _pairs(cells[name], where, name) if name == "localizedNames" else cells[name]
                if name in product and product[name] != value:
                    raise InputError(f"{where}: {name} differs from the product's earlier rows")
                product[name] = value
        if "unitAmount" in cells or "currency" in cells:
            price: dict[str, Any] = {n: cells[n] for n in PRICE_FIELDS if n in cells}
            if "isDefaultPrice" in price:
                price["isDefaultPrice"] = price["isDefaultPrice"].lower() in ("true", "yes", "1")
            if "currencyOptions" in price:
                price["currencyOptions"] = _pairs(price["currencyOptions"], where, "currencyOptions")
            recurring = {n: cells[n] for n in RECURRING_FIELDS if n in cells}
            if recurring:
                price["recurringDetails"] = recurring
            product["priceList"].append(price)
    return _unique([_entry(p, first_seen[k]) for k, p in products.items()])


def _unique(entries: list[CatalogEntry]) -> list[CatalogEntry]:
    seen: dict[str, str] = {}
    for entry in entries:
        if entry.merchantReferenceId in seen:
            raise InputError(
                f"{entry.source}: merchantReferenceId {entry.merchantReferenceId!r} "
                f"already used at {seen[entry.merchantReferenceId]}"
            )
        seen[entry.merchantReferenceId] = entry.source
    return entries


def plan_catalog(entries: Sequence[CatalogEntry], journal: Journal) -> pd.DataFrame:
    """What a run would do per product: new, unchanged, changed (refused), retry or unknown.

    ``changed`` means the SKU was created with a different definition: the toolkit refuses to
    create it again (use a new SKU); ``retry`` means an earlier attempt created nothing.
    """
    rows = []
    for entry in entries:
        record = journal.get("product", entry.merchantReferenceId)
        if record is None:
            action = "new"
        elif record.state in SENDABLE_STATES:
            action = "retry"
        elif request_hash(entry.request.to_json()) != request_hash(
            ProductRequest.build(record.request).to_json()
        ):
            action = "changed"
        else:
            action = "unchanged" if record.state == "succeeded" else "unknown"
        rows.append(
            {
                "merchantReferenceId": entry.merchantReferenceId,
                "name": entry.request.name,
                "prices": len(entry.request.priceList or []),
                "action": action,
                "productId": (record.response or {}).get("productId") if record else None,
            }
        )
    frame = pd.DataFrame(rows, columns=["merchantReferenceId", "name", "prices", "action", "productId"])
    return frame.set_index("merchantReferenceId")
