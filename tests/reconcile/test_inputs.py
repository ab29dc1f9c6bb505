"""Loading: exact amounts, names and codes, rejected rows with reasons, errors naming file/column."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reconcile.files import SANDBOX_EXPORT, write
from toolkit.errors import InputError
from toolkit.models import PAYMENT_STATUS_NAMES
from toolkit.reconcile import load_ledger, load_processor, load_subscription_ledger, reconcile, select_period
from toolkit.reconcile._engine.details import minor_text
from toolkit.reconcile.backends import connect
from toolkit.reconcile.inputs import checks, parse_amounts
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.sources import POINT_UNDECIDED


def test_sandbox_export_loads_without_mapping(tmp_path: Path) -> None:
    loaded = load_processor(write(tmp_path, "export.csv", SANDBOX_EXPORT))
    assert loaded.rejected.empty
    assert loaded.frame["amountMinor"].tolist() == [1230, 1200, 1250]
    assert loaded.frame["status"].astype(str).tolist() == ["success", "pending", "next_action"]
    assert loaded.frame["source_row"].tolist() == [2, 3, 4]
    assert loaded.frame["createTime"].tolist() == ["1700000000000"] * 3  # carried as text
    lean = load_processor(tmp_path / "export.csv", carry=False)
    assert "createTime" not in lean.frame.columns
    assert lean.frame["amountMinor"].tolist() == [1230, 1200, 1250]


@pytest.mark.parametrize(
    ("text", "currency", "minor"),
    [
        ("10.1", "USD", 1010),
        ("10.10", "USD", 1010),
        ("10.100", "USD", 1010),
        ("1200", "JPY", 1200),
        ("1.250", "KWD", 1250),
        ("-0.5", "EUR", -50),
        (".5", "USD", 50),
        ("7.", "USD", 700),
        ("123456789012.34", "USD", 12345678901234),
        (" 3 ", "usd", 300),
        ("0", "BHD", 0),
    ],
)
def test_amounts_are_exact(text: str, currency: str, minor: int) -> None:
    loaded = load_ledger(
        pd.DataFrame(
            {"merchantReferenceId": ["k"], "amount": [text], "currency": [currency], "status": ["success"]}
        )
    )
    assert loaded.frame["amountMinor"].tolist() == [minor]
    assert loaded.frame["currency"].astype(str).tolist() == [currency.strip().upper()]


def test_only_spaces_tabs_and_line_breaks_around_a_value_are_trimmed() -> None:
    """A value below "!" (empty, or starting with a control character) is tested for whitespace
    and kept as it is when it has none; whitespace at either end goes, inner whitespace stays."""
    frame = pd.DataFrame(
        {
            "merchantReferenceId": [" a", "b\t", "\r\nc", "\x01d", "e f", "g\x02", " \th \n"],
            "amount": ["\t1.00 ", "2", " 3\r", "4", "5", "6", "7"],
            "currency": [" usd\r", "USD", "usd", "USD", "USD\n", "USD", "\tUSD"],
            "status": ["success\n", " success", "success", "success", "success", "success", "success"],
        }
    )
    loaded = load_ledger(frame)
    assert loaded.rejected.empty
    assert loaded.frame["merchantReferenceId"].tolist() == ["a", "b", "c", "\x01d", "e f", "g\x02", "h"]
    assert loaded.frame["amountMinor"].tolist() == [100, 200, 300, 400, 500, 600, 700]
    assert set(loaded.frame["currency"].astype(str)) == {"USD"}


def test_dates_with_whitespace_around_them_place_rows_in_the_period_and_before_the_cut_off() -> None:
    """A period's column and a processor's time are trimmed before they are read: a date written
    with spaces or a line break around it is a date, not a rejected row."""
    ledger = pd.DataFrame(
        {
            "merchantReferenceId": ["a", "b", "c"],
            "amount": ["1", "2", "3"],
            "currency": ["USD"] * 3,
            "status": ["success"] * 3,
            "date": [" 2026-10-05 ", "\t2026-10-31T23:59:59Z\r\n", "2026-11-01 "],
        }
    )
    october = select_period(load_ledger(ledger), "date", "2026-10-01", "2026-10-31")
    assert october.rejected.empty
    assert october.frame["merchantReferenceId"].tolist() == ["a", "b"]
    assert october.outside == 1

    processor = ledger.drop(columns="date").assign(
        createTime=[" 1700000000000", "1700000000000\t", "\n1600000000000"]
    )
    result = reconcile(
        load_ledger(ledger.drop(columns="date")), load_processor(processor), as_of="2023-11-01"
    )
    assert result.rejected.empty
    counts = {c.side: c for c in result.counts}
    assert counts["processor"].after_cutoff == 2
    assert counts["processor"].matched == 1


@pytest.mark.parametrize(
    ("amount", "currency", "status", "reason"),
    [
        ("12.345", "USD", "success", "more decimals than USD allows (2)"),
        ("1.5", "JPY", "success", "more decimals than JPY allows (0)"),
        ("1,50", "USD", "success", "is not a number"),
        ("", "USD", "success", "is not a number"),
        ("1e3", "USD", "success", "is not a number"),
        ("12", "ZZZ", "success", "not an ISO 4217"),
        ("12", "USD", "settled", "status 'settled'"),
        ("12", "USD", "4", "status '4'"),
        ("1234567890123456789", "USD", "success", "too many digits"),
    ],
)
def test_unusable_rows_are_rejected_with_reason(amount: str, currency: str, status: str, reason: str) -> None:
    frame = pd.DataFrame(
        {
            "merchantReferenceId": ["ok", "bad"],
            "amount": ["1", amount],
            "currency": ["USD", currency],
            "status": ["1", status],
        }
    )
    loaded = load_ledger(frame)
    assert len(loaded.frame) == 1 and len(loaded.rejected) == 1
    assert loaded.rejected["source_row"].tolist() == [2]
    assert reason in loaded.rejected["detail"].iloc[0]


def test_status_names_and_codes_case_insensitive() -> None:
    frame = pd.DataFrame(
        {
            "merchantReferenceId": list("abcdefg"),
            "amount": ["1"] * 7,
            "currency": ["USD"] * 7,
            "status": ["1", "2", "3", "5", "SUCCESS", "Next_Action", "unknown"],
        }
    )
    loaded = load_processor(frame)
    assert loaded.frame["status"].astype(str).tolist() == [
        "success",
        "pending",
        "failure",
        "next_action",
        "success",
        "next_action",
        "unknown",
    ]
    assert list(loaded.frame["status"].cat.categories) == list(PAYMENT_STATUS_NAMES)


def test_journal_payments_frame_is_accepted() -> None:
    frame = pd.DataFrame(
        {
            "orderId": ["o1", "o2"],
            "paymentMethodType": ["CARD", "CARD"],
            "customerId": ["c", "c"],
            "amount": np.array([Decimal("12.30"), Decimal("1.2E+3")], dtype=object),
            "amountMinor": pd.array([1230, 1200], dtype="Int64"),
            "currency": ["USD", "JPY"],
            "status": pd.Categorical(["success", "unknown"], categories=list(PAYMENT_STATUS_NAMES)),
            "createTime": pd.to_datetime([1, 2], unit="s", utc=True).to_numpy(),
            "environment": ["sandbox"] * 2,
            "error": [None, "timeout"],
        },
        index=pd.Index(["m1", "m1"], name="merchantReferenceId"),
    )
    loaded = load_processor(frame)
    assert loaded.frame["merchantReferenceId"].tolist() == ["m1", "m1"]
    assert loaded.frame["amountMinor"].tolist() == [1230, 1200]
    assert loaded.frame["source_row"].tolist() == [1, 2]


def test_float_amounts_are_refused() -> None:
    frame = pd.DataFrame(
        {"merchantReferenceId": ["a"], "amount": [12.3], "currency": ["USD"], "status": ["success"]}
    )
    with pytest.raises(InputError, match="floats"):
        load_ledger(frame)
    mapped = frame.rename(columns={"amount": "Total"})
    with pytest.raises(InputError, match="'Total' holds floats"):
        load_ledger(mapped, mapping={"amount": "Total"})
    mixed = frame.assign(amount=np.array([Decimal("1.5")], dtype=object))
    mixed = pd.concat([mixed, frame.astype({"amount": object})], ignore_index=True)
    with pytest.raises(InputError, match="floats"):
        load_ledger(mixed)


def test_mapping_renames_user_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "books.csv", "Ref,Total,Cur,State\nA1,5.00,usd,success\n")
    loaded = load_ledger(
        path, mapping={"merchantReferenceId": "Ref", "amount": "Total", "currency": "Cur", "status": "State"}
    )
    assert loaded.frame["amountMinor"].tolist() == [500]


def test_missing_file_and_column_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.csv: file not found"):
        load_ledger(tmp_path / "nope.csv")
    path = write(tmp_path, "books.csv", "merchantReferenceId,amount,status\nA1,5.00,success\n")
    with pytest.raises(InputError, match=r"books\.csv: required column 'currency'"):
        load_ledger(path)
    with pytest.raises(InputError, match=r"column 'Total' \(mapped to 'amount'\) not found"):
        load_ledger(path, mapping={"amount": "Total"})
    with pytest.raises(InputError, match="unsupported file type"):
        load_ledger(write(tmp_path, "books.json", "{}"))


def test_excel_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "merchantReferenceId": ["a", "b"],
            "amount": ["12.30", "7"],
            "currency": ["USD", "JPY"],
            "status": ["success", "1"],
        }
    )
    frame.to_excel(tmp_path / "l.xlsx", index=False)
    loaded = load_ledger(tmp_path / "l.xlsx")
    assert loaded.frame["amountMinor"].tolist() == [1230, 7]
    assert loaded.frame["source_row"].tolist() == [2, 3]
    table = pa.table(
        {
            "merchantReferenceId": ["a", "b"],
            "amount": pa.array([Decimal("12.30"), Decimal("7")], pa.decimal128(12, 2)),
            "currency": ["USD", "JPY"],
            "status": ["success", "1"],
        }
    )
    pq.write_table(table, tmp_path / "l.parquet")
    loaded = load_ledger(tmp_path / "l.parquet")
    assert loaded.frame["amountMinor"].tolist() == [1230, 7]
    assert loaded.frame["source_row"].tolist() == [1, 2]


def test_engine_parse_and_text_round_trip() -> None:
    """The engine's text of minor units reads back as the same minor units, exactly."""
    values = [0, 1, -1, 99, 100, 123456789012345, -5, 10**17, -(10**16)]
    engine = connect("duckdb")
    for digits in (0, 2, 3, 4):
        numbers = engine.register(
            pa.table(
                {
                    "_i": pa.array(range(len(values)), pa.int64()),
                    "minor": pa.array(values, pa.int64()),
                    "digits": pa.array([digits] * len(values), pa.int64()),
                }
            )
        )
        table = Relation(f"SELECT * FROM {numbers}", ("_i", "minor", "digits"), (numbers,))
        parsed = parse_amounts(table.mutate(text=minor_text("minor", "digits")), "text", "digits")
        shown = parsed.select("_i", "text", minor="_minor", problem="_amount_problem")
        out = engine.arrow(f"SELECT text, minor, problem FROM ({shown}) ORDER BY _i").to_pylist()
        fits = [len(str(abs(v))) + max(digits - len(str(abs(v))) + 1, 0) <= 18 for v in values]
        assert [r["problem"] for r in out] == [0 if ok else 3 for ok in fits]
        assert [r["minor"] for r in out if r["problem"] == 0] == [
            v for v, ok in zip(values, fits, strict=True) if ok
        ]
        assert all(Decimal(r["text"]) == Decimal(v).scaleb(-digits) for r, v in zip(out, values, strict=True))


#: Amounts near the edges of the plain reading (``checks._plain_minor``) and past them.
EDGE_AMOUNTS = (
    *("12.50", "12.5", "12.500", "12.501", "-0.01", "007", "0012.50", "+12.50", "12.", ".5", "-"),
    *("1,234.56", "12,50", "1.234", "1.234,56", "-1.234,5", " 12.50", "12.50 ", "(12.50)", "12.50-"),
    *("99999999999999", "999999999999999999", "1234567890123456789", "1e5", "", "0.0000", "1,5"),
)


@pytest.mark.parametrize("decimal", [".", ",", POINT_UNDECIDED])
def test_plain_amounts_read_as_every_stage_reads_them(decimal: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-stage reading of plain amounts gives what the stages after it give, or stands
    aside: the same minor units and the same problem for every amount, mark and currency."""
    engine = connect("duckdb")
    texts = [text for text in EDGE_AMOUNTS for _ in range(5)]
    numbers = engine.register(
        pa.table(
            {"_i": range(len(texts)), "text": texts, "digits": [d for _ in EDGE_AMOUNTS for d in range(5)]}
        )
    )
    table = Relation(f"SELECT * FROM {numbers}", ("_i", "text", "digits"), (numbers,))

    def read() -> list[dict[str, object]]:
        parsed = parse_amounts(table, "text", "digits", decimal=decimal)
        shown = parsed.select("_i", minor="_minor", problem="_amount_problem")
        rows: list[dict[str, object]] = engine.arrow(
            f"SELECT minor, problem FROM ({shown}) ORDER BY _i"
        ).to_pylist()
        return rows

    taken = checks._plain_minor("text", "digits", decimal)
    read_plain = engine.arrow(f"SELECT COUNT({taken}) AS n FROM {numbers}").column("n")[0].as_py()
    assert read_plain >= 10  # not a test of the stages alone
    plain = read()
    monkeypatch.setattr(checks, "_plain_minor", lambda *_: "CAST(NULL AS BIGINT)")
    staged = read()
    assert [dict(r, text=t) for r, t in zip(plain, texts, strict=True)] == [
        dict(r, text=t) for r, t in zip(staged, texts, strict=True)
    ]


def test_subscription_ledger(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "subs.csv",
        "subscriptionId,merchantReferenceId,priceId,quantity,amount,currency,state\n"
        "s1,m1,p1,2,20.00,USD,active\ns2,m2,p1,x,20.00,USD,active\n"
        ",m3,p1,1,1.001,USD,paused\n",
    )
    loaded = load_subscription_ledger(path)
    assert loaded.frame["subscriptionId"].tolist() == ["s1"]
    assert loaded.frame["quantity"].tolist() == [2]
    assert loaded.rejected["source_row"].tolist() == [3, 4]
    detail = loaded.rejected["detail"].iloc[1]
    assert "subscriptionId is empty" in detail and "state 'paused'" in detail


def test_row_numbers_are_lines_of_the_file(tmp_path: Path) -> None:
    """Blank lines (which the CSV reader skips) and quoted values spanning lines do not shift the
    row numbers: a rejected row is reported on the line an editor shows it on."""
    text = (
        "merchantReferenceId,amount,currency,status,note\n"  # line 1
        "\n"  # 2
        "m1,1.00,USD,success,\n"  # 3
        "\r\n"  # 4
        "\n"  # 5
        "bad1,x,USD,success,\n"  # 6
        'm2,2.00,USD,success,"first line\nsecond line"\n'  # 7-8
        "bad2,1.00,ZZZ,success,\n"  # 9
        "\n\n"  # 10-11: trailing blank lines
    )
    loaded = load_ledger(write(tmp_path, "ledger.csv", text))
    assert loaded.rejected["source_row"].tolist() == [6, 9]
    assert loaded.frame["source_row"].tolist() == [3, 7]
    assert loaded.frame["note"].tolist() == ["", "first line\nsecond line"]
    lean = load_ledger(tmp_path / "ledger.csv", carry=False)
    assert lean.rejected["source_row"].tolist() == [6, 9]


def test_row_numbers_with_blank_lines_before_the_header_and_crlf(tmp_path: Path) -> None:
    text = "\r\n\r\nmerchantReferenceId,amount,currency,status\r\nm1,1,USD,1\r\n\r\nm2,x,USD,1\r\n"
    loaded = load_ledger(write(tmp_path, "ledger.csv", text))
    assert loaded.frame["source_row"].tolist() == [4]
    assert loaded.rejected["source_row"].tolist() == [6]


def test_subscription_ledger_rows_are_lines_too(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "subs.csv",
        "subscriptionId,merchantReferenceId,priceId,quantity,amount,currency,state\n\n"
        "s1,m1,p1,2,20.00,USD,active\n\n\ns2,m2,p1,x,20.00,USD,active\n",
    )
    loaded = load_subscription_ledger(path)
    assert loaded.frame["source_row"].tolist() == [3]
    assert loaded.rejected["source_row"].tolist() == [6]


def test_a_key_guarded_by_a_csv_writer_reads_back_as_the_payment_key(tmp_path: Path) -> None:
    """The sandbox's CSV export guards ``=1+1`` as ``'=1+1``; reconciled, it is the payment's key."""
    from toolkit.reconcile import load_processor

    path = tmp_path / "export.csv"
    path.write_text(
        "merchantReferenceId,amount,currency,status\n'=1+1,1.00,USD,success\n"
        "'-A,2.00,USD,success\n'plain,3.00,USD,success\n",
        encoding="utf-8",
    )
    loaded = load_processor(path)
    assert list(loaded.frame["merchantReferenceId"]) == ["=1+1", "-A", "'plain"]
