"""Catalog files: YAML and CSV to product requests, exact amounts, errors naming file and row."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from toolkit import InputError, Journal, load_catalog, plan_catalog
from toolkit.models import PriceType

YAML = """products:
  - merchantReferenceId: SKU-1
    name: Cookbook
    localizedNames: {de: Kochbuch, ja: 料理本}
    taxCategory: ebook
    priceList:
      - {currency: USD, unitAmount: 9.99, isDefaultPrice: true, currencyOptions: {JPY: 1500, EUR: 9.49}}
      - currency: USD
        unitAmount: 29.97
        priceType: recurring
        recurringDetails: {interval: quarter, intervalCount: 1, trialPeriodDays: 14, pricingModel: flat_rate}
"""

CSV = """merchantReferenceId,name,localizedNames,taxCategory,currency,unitAmount,priceType,interval,intervalCount,isDefaultPrice,currencyOptions
SKU-1,Cookbook,de=Kochbuch;ja=料理本,ebook,USD,9.99,,,,true,JPY=1500;EUR=9.49
SKU-1,Cookbook,,ebook,USD,29.97,recurring,quarter,1,,
"""


def test_yaml_and_csv_describe_the_same_product(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(YAML, encoding="utf-8")
    (tmp_path / "c.csv").write_text(CSV, encoding="utf-8")
    (from_yaml,) = load_catalog(tmp_path / "c.yaml")
    (from_csv,) = load_catalog(tmp_path / "c.csv")
    for entry in (from_yaml, from_csv):
        assert entry.merchantReferenceId == "SKU-1"
        prices = entry.request.priceList or []
        assert [p.unitAmount for p in prices] == [Decimal("9.99"), Decimal("29.97")]
        assert prices[0].currencyOptions == {"JPY": Decimal("1500"), "EUR": Decimal("9.49")}
        assert prices[1].priceType is PriceType.RECURRING
        assert entry.request.localizedNames == {"de": "Kochbuch", "ja": "料理本"}


def test_yaml_numbers_never_pass_through_float(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(YAML.replace("9.99", "0.10000000000000000555"), encoding="utf-8")
    with pytest.raises(InputError, match=r"more decimals than USD allows|more than 4 decimals"):
        load_catalog(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (CSV.replace("SKU-1,Cookbook,,", ",Cookbook,,"), r"c.csv: row 3: merchantReferenceId is required"),
        (CSV.replace("29.97", "-1"), r"c.csv: row 2 \(SKU-1\).*unitAmount"),
        (CSV.replace("SKU-1,Cookbook,,", "SKU-1,Other,,"), r"c.csv: row 3: name differs"),
    ],
)
def test_csv_errors_name_the_file_and_row(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "c.csv").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_catalog(tmp_path / "c.csv")


def test_missing_file_and_duplicate_skus(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_catalog(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="already used"):
        load_catalog([{"merchantReferenceId": "A", "name": "x"}, {"merchantReferenceId": "A", "name": "y"}])


def test_plan_says_new_unchanged_and_changed(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(YAML, encoding="utf-8")
    entries = load_catalog(tmp_path / "c.yaml")
    with Journal(tmp_path / "j.sqlite", environment="t") as journal:
        assert plan_catalog(entries, journal)["action"].tolist() == ["new"]
        row = journal.begin("product", "SKU-1", entries[0].request.to_json())
        assert isinstance(row, int)
        journal.finish(row, state="succeeded", response={"productId": "prod_1"})
        assert plan_catalog(entries, journal).loc["SKU-1", "action"] == "unchanged"
        changed = load_catalog([{"merchantReferenceId": "SKU-1", "name": "Renamed"}])
        assert plan_catalog(changed, journal).loc["SKU-1", "action"] == "changed"
