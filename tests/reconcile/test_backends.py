"""The same engine on DuckDB and on Spark: identical results; resource failures exit 2 in one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reconcile.files import EXCEL_ROWS, SANDBOX_EXPORT
from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, frame
from toolkit.errors import EngineError, InputError
from toolkit.reconcile import ReconciliationResult, load_ledger, load_processor, reconcile
from toolkit.reconcile.backends import (
    LOCAL_SHUFFLE_PARTITIONS,
    Backend,
    SparkBackend,
    connect,
    parse_memory_limit,
    size_text,
)
from toolkit.reconcile.backends.memory import RESERVE_SHARE
from toolkit.reconcile.backends.spark import JVM_OUTSIDE_HEAP, driver_memory

pytestmark = [
    pytest.mark.timeout(600),
    # py4j leaves its gateway's sockets to the garbage collector.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.fixture(scope="module")
def spark() -> Backend:
    """A local Spark session (Java 17 is on the machines; it takes seconds to start)."""
    return connect("pyspark")


def same(a: ReconciliationResult, b: ReconciliationResult) -> None:
    """Identical exceptions, summary, counts, totals and matched keys."""
    pd.testing.assert_frame_equal(a.exceptions, b.exceptions)
    pd.testing.assert_frame_equal(a.summary, b.summary)
    assert a.counts == b.counts and a.totals == b.totals
    key = "merchantReferenceId"
    left = a.matched.sort_values(key).reset_index(drop=True)
    right = b.matched.sort_values(key).reset_index(drop=True)
    assert left.astype(str).equals(right.astype(str))


@pytest.mark.slow
@pytest.mark.parametrize("tolerance", [0, 1])
def test_planted_discrepancies_identical_on_spark(spark: Backend, tolerance: int) -> None:
    ledger, processor = load_ledger(frame(PLANTED_LEDGER)), load_processor(frame(PLANTED_PROCESSOR))
    on_duckdb = reconcile(ledger, processor, amount_tolerance=tolerance)
    on_spark = reconcile(ledger, processor, amount_tolerance=tolerance, backend=spark)
    same(on_duckdb, on_spark)
    assert on_spark.category_counts["amount_mismatch"] == (3 if tolerance == 0 else 1)


@pytest.mark.slow
def test_a_semicolon_utf16_export_with_a_title_identical_on_spark(spark: Backend, tmp_path: Path) -> None:
    """Both backends read the same UTF-8 copy of a file that is not UTF-8 (sources.readable)."""
    ledger, export = tmp_path / "books.csv", tmp_path / "export.csv"
    ledger.write_bytes(("Books\r\n" + EXCEL_ROWS.replace("\n", "\r\n")).encode("utf-16"))
    export.write_bytes(SANDBOX_EXPORT.replace(",", ";").encode("utf-16"))
    left, right = load_ledger(ledger), load_processor(export)
    on_duckdb, on_spark = reconcile(left, right), reconcile(left, right, backend=spark)
    same(on_duckdb, on_spark)
    assert on_spark.rejected["source_row"].tolist() == [5]
    assert on_spark.category_counts["missing_in_processor"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("shifted", [False, True], ids=["lines", "spanning"])
def test_rows_of_empty_fields_are_left_out_as_blank_lines_are(
    spark: Backend, tmp_path: Path, shifted: bool
) -> None:
    """A spreadsheet's empty row is a line of delimiters (``;;;``): not a row at all, on either
    backend, whether rows are numbered by their place or looked up (a value over two lines)."""
    note = '"two\nlines"' if shifted else "one"
    ledger = tmp_path / "books.csv"
    ledger.write_text(
        "merchantReferenceId;amount;currency;status;note\n"  # 1
        f"m1;1,00;EUR;success;{note}\n"  # 2 (and 3)
        ";;;;\n"
        " ; ;\t;;\n"
        "m9;x;EUR;success;\n"
        ";;;;\n",
        encoding="utf-8",
    )
    processor = frame([("m1", "1.00", "EUR", "success")])
    left, right = load_ledger(ledger, decimal=","), load_processor(processor)
    on_duckdb, on_spark = reconcile(left, right), reconcile(left, right, backend=spark)
    same(on_duckdb, on_spark)
    assert on_duckdb.rejected["source_row"].tolist() == [6 if shifted else 5]  # m9 only
    assert on_duckdb.counts[0].rows == 2 and on_duckdb.counts[0].matched == 1


#: Ledger text, its decimal mark (None: detected), processor rows, rejected rows, the rows read
#: that the processor lacks.
AMOUNT_READINGS: dict[str, tuple[str, str | None, list[tuple[str, str, str, str]], list[int], int]] = {
    "decimal commas": (  # no-break spaces and apostrophes among the grouping marks
        "merchantReferenceId;amount;currency;status\n"
        "m1;1.234,56;EUR;success\nm2;1\u00a0000,5;EUR;success\nm3;1'000;CHF;success\nm9;12.50;EUR;success\n",
        ",",
        [("m1", "1234.56", "EUR", "success"), ("m2", "1000.50", "EUR", "success")],
        [5],
        1,  # m3, read as 1000.00 CHF
    ),
    "thousands grouped": (  # the point reading (``_ungrouped``), refusals included
        'merchantReferenceId,amount,currency,status\nm1,"1,234.56",USD,success\nm2,"1,200",JPY,success\n'
        'm3,1\u00a0234.5,EUR,success\nm4,1\'000,CHF,success\nm8,"1,23.4",USD,success\nm9,"1,234",KWD,success\n',
        None,
        [("m1", "1234.56", "USD", "success"), ("m2", "1200", "JPY", "success")],
        [6, 7],
        2,  # m3 and m4, read
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("reading", list(AMOUNT_READINGS))
def test_amount_readings_identical_on_spark(spark: Backend, tmp_path: Path, reading: str) -> None:
    text, decimal, processor_rows, rejected, unmatched = AMOUNT_READINGS[reading]
    ledger = tmp_path / "books.csv"
    ledger.write_text(text, encoding="utf-8")
    left, right = load_ledger(ledger, decimal=decimal), load_processor(frame(processor_rows))
    on_duckdb, on_spark = reconcile(left, right), reconcile(left, right, backend=spark)
    same(on_duckdb, on_spark)
    assert on_spark.rejected["source_row"].tolist() == rejected
    assert on_spark.category_counts["missing_in_processor"] == unmatched
    assert on_spark.category_counts["amount_mismatch"] == 0


@pytest.mark.slow
def test_files_identical_on_spark(spark: Backend, tmp_path: Path) -> None:
    """CSV with blank lines and a value over two lines, and a folder of Parquet files."""
    csv_path = tmp_path / "export.csv"
    csv_path.write_text(
        SANDBOX_EXPORT.replace("\no2,", "\n\no2,") + 'o4,m4,c1,CARD,pi1,"1.00",'
        'USD,,,success,1700000000000,"17000\n00000001"\n',
        encoding="utf-8",
    )
    folder = tmp_path / "ledger"
    folder.mkdir()
    rows = [
        ("m1", "12.30", "USD", "success"),
        ("m2", "1200", "JPY", "pending"),
        ("m3", "1.250", "KWD", "next_action"),
        ("m9", "x", "USD", "success"),
    ]
    for i, part in enumerate((rows[:2], rows[2:])):
        pq.write_table(pa.Table.from_pandas(frame(part), preserve_index=False), folder / f"part-{i}.parquet")
    ledger, processor = load_ledger(folder), load_processor(csv_path)
    on_duckdb, on_spark = reconcile(ledger, processor), reconcile(ledger, processor, backend=spark)
    same(on_duckdb, on_spark)
    assert on_duckdb.category_counts["missing_in_ledger"] == 1  # m4
    rejected = on_duckdb.rejected
    assert rejected["source"].tolist() == [str(folder / "part-1.parquet")]  # its file, not the folder
    assert rejected["source_row"].tolist() == [2]
    missing = on_duckdb.exceptions.set_index("merchantReferenceId").loc["m4"]
    assert missing["source_row"] == 6  # the line after the blank one


def test_a_glob_of_parquet_files_reads_every_file(tmp_path: Path) -> None:
    for i in range(3):
        pq.write_table(
            pa.Table.from_pandas(frame([(f"k{i}", "1.00", "USD", "success")]), preserve_index=False),
            tmp_path / f"p{i}.parquet",
        )
    loaded = load_ledger(str(tmp_path / "p*.parquet"))
    assert loaded.frame["merchantReferenceId"].tolist() == ["k0", "k1", "k2"]
    assert loaded.frame["source_row"].tolist() == [1, 1, 1]  # each the first row of its file


def _parquet_file(path: Path, rows: str) -> None:
    """A Parquet file written by DuckDB from a SELECT, with DuckDB's own types."""
    import duckdb

    duckdb.connect().execute(f"COPY ({rows}) TO '{path}'")


@pytest.mark.slow
def test_parquet_files_of_different_amount_types_are_read_exactly_as_text(
    tmp_path: Path, backend: Backend
) -> None:
    """Read together, DuckDB makes DECIMAL(38,2) and DECIMAL(38,10) the former: 12.345 USD became
    12.35 and matched. Each part is read as text instead, and 12.3450000000 USD is rejected."""
    _parquet_file(
        tmp_path / "a.parquet",
        "SELECT 'w1' merchantReferenceId, 1.25::DECIMAL(38,2) amount, 'USD' currency, 'success' status",
    )
    _parquet_file(
        tmp_path / "b.parquet",
        "SELECT 'w2' merchantReferenceId, 12.345::DECIMAL(38,10) amount, 'USD' currency, "
        "'success' status, 'x' note",
    )
    processor = load_processor(frame([("w1", "1.25", "USD", "success"), ("w2", "12.35", "USD", "success")]))
    result = reconcile(load_ledger(tmp_path), processor, backend=backend)
    assert result.matched["merchantReferenceId"].tolist() == ["w1"]
    assert result.rejected["merchantReferenceId"].tolist() == ["w2"]
    assert "12.3450000000" in result.rejected["detail"].iloc[0]
    assert result.category_counts["missing_in_ledger"] == 1


@pytest.mark.slow
def test_a_rejected_row_of_a_parquet_folder_names_its_file(tmp_path: Path, backend: Backend) -> None:
    """Both were "the folder, row 1": the row numbers restart in each file."""
    for day, key in (("2025-05-01", "r1"), ("2025-05-02", "r3")):
        _parquet_file(
            tmp_path / f"{day}.parquet",
            f"SELECT '{key}' merchantReferenceId, 'abc' amount, 'USD' currency, 'success' status "
            f"UNION ALL SELECT 'ok-{day}', '2.00', 'USD', 'success'",
        )
    processor = load_processor(
        frame([(f"ok-{d}", "2.00", "USD", "success") for d in ("2025-05-01", "2025-05-02")])
    )
    result = reconcile(load_ledger(tmp_path), processor, backend=backend)
    files = [str(tmp_path / "2025-05-01.parquet"), str(tmp_path / "2025-05-02.parquet")]
    rejected = result.exceptions[result.exceptions["category"] == "rejected_row"]
    assert rejected[["merchantReferenceId", "source", "source_row"]].values.tolist() == [
        ["r1", files[0], 1],
        ["r3", files[1], 1],
    ]
    assert result.rejected["source"].tolist() == files
    assert load_ledger(tmp_path).rejected["source"].tolist() == files


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (
            "SELECT 'd2' merchantReferenceId, 0.3::DOUBLE amount, 'USD' currency, 'success' status",
            "column 'amount' holds floats in {path}",
        ),
        ("", "{path}: cannot be read"),  # an empty file, such as a part still being written
    ],
)
def test_every_file_of_a_parquet_folder_is_checked_wherever_it_sorts(
    tmp_path: Path, second: str, message: str
) -> None:
    """Only the first file's schema was looked at: a later file of floats was read through a
    double (1234567890123456.78 matched .80), an empty one gave a traceback and exit 1."""
    _parquet_file(
        tmp_path / "a.parquet",
        "SELECT 'd1' merchantReferenceId, 1.25::DECIMAL(18,2) amount, 'USD' currency, 'success' status",
    )
    path = tmp_path / "b.parquet"
    if second:
        _parquet_file(path, second)
    else:
        path.write_bytes(b"")
    with pytest.raises(InputError, match=re.escape(message.format(path=path))):
        load_ledger(tmp_path)


def test_a_float_price_is_refused_like_a_float_amount(tmp_path: Path) -> None:
    """A double cannot hold 1234567890123456.78: the price matched through its float."""
    path = tmp_path / "export.parquet"
    _parquet_file(
        path,
        "SELECT 'g1' merchantReferenceId, '560.00' amount, 'PHP' currency, 'success' status, "
        "1234567890123456.78::DOUBLE pricingAmount, 'USD' pricingCurrency",
    )
    with pytest.raises(InputError, match="column 'pricingAmount' holds floats"):
        load_processor(path)
    with pytest.raises(InputError, match="column 'Price' holds floats"):
        load_processor(
            frame([("g1", "560.00", "PHP", "success")]).assign(Price=[1.5], pricingCurrency=["USD"]),
            mapping={"pricingAmount": "Price"},
        )


@pytest.mark.slow
def test_an_export_cut_short_refuses_the_file_on_both_backends(spark: Backend, tmp_path: Path) -> None:
    """A row with fields missing gave a traceback and exit 1 (which a scheduler reads as
    "findings") on both backends."""
    ledger = tmp_path / "books.csv"
    ledger.write_text("merchantReferenceId,amount,currency,status\nm1,1.00,USD,success\nm2,3.0")
    processor = load_processor(frame([("m1", "1.00", "USD", "success")]))
    with pytest.raises(InputError, match=re.escape(f"{ledger}: line 3 cannot be read (Expected Number")):
        reconcile(load_ledger(ledger), processor)
    with pytest.raises(InputError, match=re.escape(f"{ledger}: a row cannot be read (the row: 'm2,3.0')")):
        reconcile(load_ledger(ledger), processor, backend=spark)
    done = _cli("--ledger", str(ledger), "--processor", str(ledger), "--output-dir", "out", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {ledger}: line 3 cannot be read")
    assert "the line: 'm2,3.0'" in done.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_row_with_a_field_too_many_refuses_the_file_on_both_backends(
    tmp_path: Path, backend: Backend
) -> None:
    """DuckDB dropped the field that was too many and read the row, where Spark refused the file;
    a delimiter inside quotes is not a field."""
    ledger = tmp_path / "books.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status\n"
        'm1,1.00,USD,success\n"m,2","2.00",USD,success\nm3,3.00,USD,success,1.00\n'
    )
    processor = load_processor(frame([("m1", "1.00", "USD", "success")]))
    refused = (  # Spark finds the row itself, where DuckDB reads it
        f"{ledger}: a row cannot be read (the row: 'm3,3.00,USD,success,1.00')"
        if backend.name == "pyspark"
        else f"{ledger}: line 4 cannot be read (5 fields where the header has 4; "
        "the line: 'm3,3.00,USD,success,1.00')"
    )
    with pytest.raises(InputError, match=re.escape(refused)):
        reconcile(load_ledger(ledger), processor, backend=backend)
    ledger.write_text(ledger.read_text().replace(",1.00\n", "\n"))
    result = reconcile(load_ledger(ledger), processor, backend=backend)
    assert result.counts[0].rows == 3 and result.category_counts["missing_in_processor"] == 2


@pytest.mark.slow
def test_zeros_that_change_nothing_are_not_digits_too_many(tmp_path: Path, backend: Backend) -> None:
    """A DECIMAL(38,18) column (Spark's type for Python Decimals) writes 12.30 as
    12.300000000000000000: every row of such a file was rejected for "too many digits"."""
    import decimal

    amounts = pa.array([decimal.Decimal("1500"), decimal.Decimal("12.3")], pa.decimal128(38, 18))
    path = tmp_path / "typed.parquet"
    pq.write_table(
        pa.table(
            {
                "merchantReferenceId": ["a", "b"],
                "amount": amounts,
                "currency": ["JPY", "USD"],
                "status": ["success"] * 2,
            }
        ),
        path,
    )
    written = [
        ("c", "000000000000000001.00", "USD"),  # 18 zeros before the 1
        ("d", "-0000000000000000000000012.30000000000000000000", "EUR"),
        ("e", "1234567890123456789", "JPY"),  # 19 digits: too many
        ("f", "12.300000000000000001", "USD"),  # a decimal too many, however far out
    ]
    ledger = load_ledger(frame([("a", "1500", "JPY", "success"), ("b", "12.30", "USD", "success")]))
    texts = load_processor(frame([(key, amount, currency, "success") for key, amount, currency in written]))
    typed = reconcile(ledger, load_processor(path), backend=backend)
    assert typed.matched["merchantReferenceId"].tolist() == ["a", "b"] and typed.rejected.empty
    result = reconcile(ledger, texts, backend=backend)
    rows = result.exceptions.set_index("merchantReferenceId")
    assert rows.loc["c", "processor_amount"] == decimal.Decimal("1.00")
    assert rows.loc["d", "processor_amount"] == decimal.Decimal("-12.30")
    assert result.rejected["detail"].tolist() == [
        "amount '1234567890123456789' has too many digits",
        "amount '12.300000000000000001' has more decimals than USD allows (2)",
    ]


#: Dates and times as exports write them, and what each is read as (None: rejected).
WHEN_WRITTEN = {
    "2025-05-04": "2025-05-04T00:00:00",
    "2025-5-4": "2025-05-04T00:00:00",
    "2025-05-04 10:00": "2025-05-04T10:00:00",
    "2025-05-04T10:00:00.123456789Z": "2025-05-04T10:00:00",
    "2025-05-04T10:00:00+0200": "2025-05-04T08:00:00",
    "2025-05-04T10:00:00-05": "2025-05-04T15:00:00",
    "2025-05-04 10:00:00 Europe/Paris": "2025-05-04T08:00:00",
    "2025-05-04T10:00:00 UTC": "2025-05-04T10:00:00",
    # Day first with dots, as German Excel writes dates (each row of such a file was rejected).
    "31.05.2025": "2025-05-31T00:00:00",
    "1.5.2025 21:30": "2025-05-01T21:30:00",
    "31.05.2025 21:30:15": "2025-05-31T21:30:15",
    "31.02.2025": None,
    "05/31/2025": None,  # slashes: which comes first depends on who wrote it
    # Read by one backend and not the other, or differently: rejected by both.
    "2025-05-04T24:00:00": None,  # DuckDB: the next day
    "2025-05-04T10:00:00 +02:00": None,  # Spark: with the offset
    "2025-05-04 10:00:00.000 +0000": None,
    "2025-05-04T10:00:00Europe/Paris": None,
    "2025-05-04T10:00:00UTC": None,
    "2025-05-04T10": None,
    "2025-02-29": None,
}


@pytest.mark.slow
def test_dates_and_times_are_read_alike_on_both_backends(backend: Backend) -> None:
    """DuckDB read 24:00 as the next day where Spark rejected it, and Spark read a zone or an
    offset after a space where DuckDB rejected it: the same file gave other exceptions, cut-offs
    and periods on each backend."""
    import datetime as dt

    from toolkit.reconcile.inputs import with_epoch_seconds
    from toolkit.reconcile.relation import Relation

    expected = [
        None if v is None else int(dt.datetime.fromisoformat(v).replace(tzinfo=dt.UTC).timestamp())
        for v in WHEN_WRITTEN.values()
    ]
    table = backend.register(pa.table({"when": list(WHEN_WRITTEN)}))
    written = Relation(f"SELECT * FROM {table}", ("when",), (table,))
    read = backend.arrow(with_epoch_seconds(written, "when", "seconds")).to_pylist()
    assert [r["seconds"] for r in read] == expected, backend.name


def test_a_quote_left_open_refuses_the_file_naming_its_line(tmp_path: Path) -> None:
    ledger = tmp_path / "books.csv"
    ledger.write_text(
        'merchantReferenceId,amount,currency,status\nm1,1.00,USD,success\nm2,"2.00,USD,success\nm3,3.00,USD,success\n'
    )
    with pytest.raises(InputError, match=re.escape(f"{ledger}: line 3 cannot be read (")):
        reconcile(load_ledger(ledger), load_processor(frame([("m1", "1.00", "USD", "success")])))


def test_a_spill_dir_that_cannot_be_written_exits_2(tmp_path: Path) -> None:
    """/proc is there but takes no files, like a read-only mount: DuckDB's error came with a
    traceback and exit 1 when it first spilled, or when it made its working database."""
    ledger, processor = _big_inputs(tmp_path, 10)
    done = _cli(
        *("--ledger", str(ledger), "--processor", str(processor), "--output-dir", "out"),
        *("--spill-dir", "/proc"),
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: --spill-dir /proc: cannot be written (")
    assert not (tmp_path / "out").exists()


def test_a_spill_dir_that_cannot_be_made_exits_2(tmp_path: Path) -> None:
    ledger, processor = _big_inputs(tmp_path, 10)
    (tmp_path / "a-file").write_text("x")
    done = _cli(
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "out"),
        "--spill-dir",
        str(tmp_path / "a-file" / "spill"),
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "--spill-dir" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_run_leaves_its_spill_dir_as_it_found_it(tmp_path: Path) -> None:
    """The engine keeps its intermediate tables in a database file under the spill directory
    (the buffer manager reads them back rather than spilling them); the file goes with the run."""
    ledger, processor = _big_inputs(tmp_path, 1000)
    spill = tmp_path / "spill"
    spill.mkdir()
    (spill / "mine.txt").write_text("the user's own file")
    done = _cli(
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "out"),
        "--spill-dir",
        str(spill),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in spill.iterdir()) == ["mine.txt"]


def test_memory_limits_are_read_in_binary_units_as_spark_reads_them() -> None:
    assert parse_memory_limit("6GB") == 6 << 30
    assert parse_memory_limit("500mb") == 500 << 20
    assert [size_text(parse_memory_limit(t)) for t in ("6GB", "1.5g", "500MB", "8MB", "1KB", "12")] == [
        "6 GiB",
        "1.5 GiB",
        "500 MiB",
        "8 MiB",
        "1 KiB",
        "12 bytes",
    ]
    with pytest.raises(EngineError, match="--memory-limit"):
        parse_memory_limit("lots")


def test_frames_are_kept_in_memory_and_files_in_a_database_file_in_the_spill_dir(tmp_path: Path) -> None:
    """Inputs in memory already (frames) keep the engine's tables in memory; files, which may be
    larger than memory, keep them in a database file in the spill directory. Same result."""
    ledger, processor = frame(PLANTED_LEDGER), frame(PLANTED_PROCESSOR)
    in_memory = reconcile(load_ledger(ledger), load_processor(processor), spill_dir=tmp_path / "frames")
    assert not list((tmp_path / "frames").rglob("*.duckdb"))
    paths = tmp_path / "ledger.parquet", tmp_path / "processor.parquet"
    ledger.to_parquet(paths[0])
    processor.to_parquet(paths[1])
    on_disk = reconcile(load_ledger(paths[0]), load_processor(paths[1]), spill_dir=tmp_path / "files")
    assert [p.name for p in (tmp_path / "files").rglob("*.duckdb")] == ["kept.duckdb"]
    assert in_memory.category_counts == on_disk.category_counts
    assert in_memory.counts[0].rows == on_disk.counts[0].rows


def test_the_checks_run_each_stage_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks' stages are each a select of its own, so the place of an amount's point
    (``STRPOS``), which later stages read several times, is computed once per amount (written
    into one select, three times)."""
    queries: list[str] = []
    keep, arrow = Backend.keep, Backend.arrow

    def kept(self: Backend, query: object, **kwargs: str) -> object:
        queries.append(str(query))
        return keep(self, query, **kwargs)  # type: ignore[arg-type]

    def fetched(self: Backend, query: object) -> object:
        queries.append(str(query))
        return arrow(self, query)  # type: ignore[arg-type]

    monkeypatch.setattr(Backend, "keep", kept)
    monkeypatch.setattr(Backend, "arrow", fetched)
    priced = frame(PLANTED_PROCESSOR).assign(pricingAmount="", pricingCurrency="")
    result = reconcile(load_ledger(frame(PLANTED_LEDGER)), load_processor(priced))
    assert result.category_counts["amount_mismatch"] > 0
    amount = "'^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)$'"
    checks = [sql for sql in queries if amount in sql]
    # The ledger's and the processor's (with its price: two amounts), each once: the planted
    # rejected rows' reasons are read from the codes the checks kept, not from a second check.
    assert result.rejected["merchantReferenceId"].tolist()
    assert [sql.count(amount) for sql in checks] == [1, 2]
    assert [sql.count("STRPOS(") for sql in checks] == [1, 2]


def test_duckdb_leaves_a_quarter_of_the_memory_limit_to_the_rest_of_the_process(tmp_path: Path) -> None:
    """The limit is the process's: Python, the Arrow results and the report live beside DuckDB's
    buffers, and DuckDB allocates beyond its own limit (10M rows a side peaked 2.1 GB at 1.5 GiB)."""
    engine = connect("duckdb", memory_limit="2GB", spill_dir=tmp_path)
    setting = engine.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert setting == "1.5 GiB"
    assert engine.memory_limit == 2 << 30  # what an error message names: the limit given


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit.cli", "reconcile", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _big_inputs(tmp_path: Path, rows: int) -> tuple[Path, Path]:
    keys = [f"k{i}" for i in range(rows)]
    data = pd.DataFrame(
        {
            "merchantReferenceId": keys,
            "amount": ["1.00"] * rows,
            "currency": ["USD"] * rows,
            "status": ["success"] * rows,
        }
    )
    ledger, processor = tmp_path / "ledger.parquet", tmp_path / "processor.parquet"
    data.to_parquet(ledger)
    data.to_parquet(processor)
    return ledger, processor


def test_out_of_memory_limit_exits_2_in_one_line(tmp_path: Path) -> None:
    ledger, processor = _big_inputs(tmp_path, 300_000)
    done = _cli(
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "out"),
        "--memory-limit",
        "8MB",
        "--spill-dir",
        str(tmp_path / "spill"),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    assert "memory limit (8 MiB)" in lines[0] and "--memory-limit" in lines[0]
    assert not (tmp_path / "out").exists()  # no partial report


@pytest.mark.slow
def test_spark_without_java_exits_2_in_one_line(tmp_path: Path) -> None:
    ledger, processor = _big_inputs(tmp_path, 10)
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "PATH": "/usr/bin:/bin"}
    done = _cli(
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "out"),
        "--backend",
        "pyspark",
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(error) == 1 and error[0].startswith("error: Spark could not start (a local session): ")
    # What to change, where it said only "is Java 17 installed and JAVA_HOME set?"
    assert f"; JAVA_HOME {tmp_path / 'no-java'} has no bin/java: point it at a Java 17. Or run" in error[0]
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_spark_table_by_name(spark: Backend) -> None:
    """``table:NAME`` reads a table of Spark's catalog; float amounts are refused, not read."""
    columns = ["merchantReferenceId", "amount", "currency", "status"]
    _catalog_table(spark, "settlements", pd.DataFrame(PLANTED_PROCESSOR, columns=columns))
    _catalog_table(spark, "float_books", pd.DataFrame([("a", 1.5, "USD", "success")], columns=columns))
    ledger = load_ledger(frame(PLANTED_LEDGER))
    from_table = reconcile(ledger, load_processor("table:settlements"), backend=spark)
    from_frame = reconcile(ledger, load_processor(frame(PLANTED_PROCESSOR)), backend=spark)
    pd.testing.assert_frame_equal(
        from_table.exceptions.drop(columns="source"), from_frame.exceptions.drop(columns="source")
    )
    assert from_table.counts[1].source == "table:settlements"
    with pytest.raises(InputError, match="'amount' holds floats"):
        reconcile(load_ledger("table:float_books"), load_processor("table:settlements"), backend=spark)


@pytest.mark.slow
def test_a_spark_table_is_read_by_its_columns_like_a_file(spark: Backend) -> None:
    """A table's columns were not known: its dates, prices, a column in another case and any
    mapping were ignored or refused, so the cut-off, the settlement window, the price and the
    rejection of a bad date were skipped. A missing table gave a traceback."""
    rows = [
        ("p1", "560.00", "PHP", "success", "2025-05-02T10:00:00Z", "10.00", "USD"),  # charged in PHP
        ("p2", "5.00", "USD", "success", "2025-05-30T10:00:00Z", "", ""),  # after the cut-off
        ("p3", "7.00", "USD", "success", "2025-02-30", "", ""),  # not a date
        ("p4", "8.00", "USD", "pending", "2025-05-19T10:00:00Z", "", ""),  # in the window
    ]
    names = [
        "MerchantReferenceId",
        "Amount",
        "currency",
        "State",
        "createTime",
        "pricingAmount",
        "pricingCurrency",
    ]
    processor = pd.DataFrame(rows, columns=names)
    _catalog_table(spark, "dated_settlements", processor)
    ledger = load_ledger(
        pd.DataFrame(
            [("p1", "10.00", "USD", "success", "2025-05-02"), ("p4", "8.00", "USD", "success", "2025-05-19")],
            columns=["merchantReferenceId", "amount", "currency", "status", "date"],
        )
    )
    mapping = {"status": "State"}
    table, same_frame = (
        load_processor("table:dated_settlements", mapping=mapping),
        load_processor(processor, mapping=mapping),
    )
    from_table = reconcile(ledger, table, as_of="2025-05-20", backend=spark)
    from_frame = reconcile(ledger, same_frame, as_of="2025-05-20", backend=spark)
    pd.testing.assert_frame_equal(
        from_table.exceptions.drop(columns="source"), from_frame.exceptions.drop(columns="source")
    )
    assert from_table.counts == (
        from_frame.counts[0],
        replace(from_frame.counts[1], source="table:dated_settlements"),
    )
    assert from_table.matched["merchantReferenceId"].tolist() == ["p1"]  # by its price
    assert from_table.counts[1].after_cutoff == 1 and from_table.rejected["merchantReferenceId"].tolist() == [
        "p3"
    ]
    assert from_table.counts[1].in_transit == 1  # p4, pending inside the window
    with pytest.raises(InputError, match="table:nowhere: not a table of the Spark session's catalog"):
        load_processor("table:nowhere")


def _catalog_table(spark: Backend, name: str, rows: pd.DataFrame) -> None:
    """A table of the Spark session's catalog, made from Arrow as a user's would be read: a frame
    made from Python rows starts Python workers for every query that reads it (325 ms a query on a
    warm session, against 16 ms)."""
    spark.con.createDataFrame(pa.Table.from_pandas(rows, preserve_index=False)).createOrReplaceTempView(name)


@pytest.mark.slow
def test_a_local_spark_run_stays_on_loopback_and_its_output_is_the_commands(tmp_path: Path) -> None:
    """A local session binds to 127.0.0.1, and Spark's warnings (a window over a whole table,
    a plan too long to print) stay out of the command's output, as does the generated code of a
    dated check too long to compile (400 lines logged as an ERROR, for a run that succeeds)."""
    ledger, processor = tmp_path / "ledger.csv", tmp_path / "processor.csv"
    frame(PLANTED_LEDGER).assign(date="2025-05-01").to_csv(ledger, index=False)
    frame(PLANTED_PROCESSOR).assign(createTime="2025-05-01T10:00:00Z").to_csv(processor, index=False)
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"}
    done = _cli(
        *("--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(tmp_path / "out")),
        *("--backend", "pyspark", "--as-of", "2025-06-30"),
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "exceptions" in done.stdout
    for noise in ("WindowExec", "SparkStringUtils", "resolves to a loopback address", "CodeGenerator"):
        assert noise not in done.stderr, done.stderr


def test_a_query_interrupted_by_ctrl_c_is_an_interrupt_not_an_error() -> None:
    """DuckDB stops its query on SIGINT and raises its own error: the command exited 1
    ("findings") with a traceback. The interrupt is given back as ``KeyboardInterrupt``."""
    import threading

    engine = connect("duckdb")
    con = engine.con  # DuckDB's own connection
    timer = threading.Timer(0.5, con.interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt), engine.failures():
            con.execute(
                "SELECT count(*) FROM range(10000000000) a, range(10) b WHERE a.range % 7 = b.range"
            ).fetchall()
    finally:
        timer.cancel()


def test_a_query_whose_spark_jvm_died_stops_the_run_saying_so() -> None:
    """A 10M-row run on Spark whose JVM ran out of heap memory (and so exited) ended with exit 1,
    "findings", and two tracebacks: the query's ``Py4JJavaError`` asks the JVM for its text, and
    asking a JVM that is gone raises. It is now an ``EngineError`` (exit 2) saying what to change.
    The dead JVM is a closed port on 127.0.0.1 that py4j asks, as it asked the JVM that died."""
    import socket

    from py4j.java_gateway import GatewayParameters, JavaGateway, JavaObject
    from py4j.protocol import Py4JJavaError

    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gateway = JavaGateway(gateway_parameters=GatewayParameters(address="127.0.0.1", port=port))
    gone = JavaObject("o42", gateway._gateway_client)
    engine = SparkBackend(None, 1536 << 20)
    with pytest.raises(EngineError) as raised, engine.failures():
        raise Py4JJavaError("An error occurred while calling o41.localCheckpoint.\n", gone)
    message = str(raised.value)
    assert message.startswith("the pyspark engine stopped in the middle of a query"), message
    assert "raise --memory-limit" in message


@pytest.mark.slow
def test_a_table_kept_on_spark_is_its_rows_not_the_plan_that_made_it(spark: Backend) -> None:
    """A kept table was a cached frame, holding the plan of every step before it: each later
    query carried the whole chain through Spark's optimizer, and the exceptions query of a
    20-row run took over a minute (the CI run timed out). A kept table is now a checkpoint
    whose plan is its rows, and it reads the same."""
    step = spark.register(pa.table({"k": ["a", "b", "c"], "n": [1, 2, 3]}))
    for i in range(3):  # a chain of kept steps, as the engine makes
        step = spark.keep(f"SELECT k, n * 2 + {i} AS n FROM {step} WHERE k <> 'z'")
    session = spark.con
    plan = str(session.table(step.name)._jdf.queryExecution().analyzed().toString())
    assert "LogicalRDD" in plan and "Filter" not in plan, plan
    assert sorted(spark.arrow(f"SELECT * FROM {step}").to_pylist(), key=lambda r: r["k"]) == [
        {"k": "a", "n": 12},
        {"k": "b", "n": 20},
        {"k": "c", "n": 28},
    ]


@pytest.mark.slow
def test_a_spark_without_local_checkpoints_keeps_tables_cached(
    spark: SparkBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark Connect before 4.0 has no local checkpoints: a kept table is then cached, and reads
    the same (that Spark is not on the machines: its refusal is raised here)."""
    from pyspark.errors import PySparkNotImplementedError

    def refused(self: object, eager: bool = True, storageLevel: object = None) -> None:
        raise PySparkNotImplementedError(
            errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "localCheckpoint"}
        )

    # The session's own frame class (pyspark 4's classic one overrides ``pyspark.sql.DataFrame``'s).
    monkeypatch.setattr(type(spark.con.range(1)), "localCheckpoint", refused)
    rows = spark.register(pa.table({"k": ["a", "b"], "n": [1, 2]}))
    kept = spark.keep(f"SELECT k, n + 1 AS n FROM {rows}")
    assert spark._frames[kept.name].is_cached
    assert sorted(r["n"] for r in spark.arrow(f"SELECT * FROM {kept}").to_pylist()) == [2, 3]


def _spark_settings(spark: SparkBackend) -> tuple[str, str, str, str]:
    names = (
        "spark.sql.shuffle.partitions",
        "spark.sql.adaptive.enabled",
        "spark.sql.codegen.wholeStage",
        "spark.sql.codegen.factoryMode",
    )
    first, second, third, fourth = (str(spark.con.conf.get(name)) for name in names)
    return first, second, third, fourth


def _kept_where(spark: SparkBackend) -> tuple[bool, bool]:
    """Whether a table the session keeps now is held in memory, and on disk."""
    rows = spark.register(pa.table({"k": ["a", "b"], "n": [1, 2]}))
    kept = spark.keep(f"SELECT k, n + 1 AS n FROM {rows}")
    level = spark._frames[kept.name]._jdf.queryExecution().analyzed().rdd().getStorageLevel()
    return bool(level.useMemory()), bool(level.useDisk())


@pytest.mark.slow
def test_a_local_session_fits_its_partitions_to_the_input(spark: SparkBackend, tmp_path: Path) -> None:
    """A small month runs in one partition without re-planning or compiling each stage or
    expression, its kept tables in memory; a larger input gets a partition per 32 MB up to eight,
    with all three back, and keeps its tables on disk only (in memory, 10M payments a side with
    10% in exception ran out of a 1.5 GB limit); a session the toolkit did not start keeps the
    settings it has."""
    ledger, export = tmp_path / "books.csv", tmp_path / "export.csv"
    ledger.write_text(EXCEL_ROWS)
    export.write_text(SANDBOX_EXPORT)
    try:
        reconcile(load_ledger(ledger), load_processor(export), backend=spark)
        assert _spark_settings(spark) == ("1", "false", "false", "NO_CODEGEN")
        assert _kept_where(spark) == (True, True)
        spark.fit(100 << 20)
        assert _spark_settings(spark) == ("4", "true", "true", "FALLBACK")
        assert _kept_where(spark) == (False, True)
        spark.fit(10 << 30)
        assert _spark_settings(spark) == (str(LOCAL_SHUFFLE_PARTITIONS), "true", "true", "FALLBACK")
        spark.fit(1)
        spark.fit(None)  # a table by name: its size is not known
        assert _spark_settings(spark) == (str(LOCAL_SHUFFLE_PARTITIONS), "true", "true", "FALLBACK")
        theirs = SparkBackend(spark.con, spark.memory_limit)
        theirs.fit(1)
        assert _spark_settings(spark) == (str(LOCAL_SHUFFLE_PARTITIONS), "true", "true", "FALLBACK")
    finally:
        spark.fit(None)


@pytest.mark.parametrize("limit", ["1.5GB", "6GB", "16GB"])
def test_a_local_sessions_jvm_fits_its_heap_and_the_rest_in_its_share_of_the_limit(limit: str) -> None:
    """The JVM's memory outside its heap (metaspace, code, Arrow's buffers: about 500 MB at 10M
    rows a side) counts in its share of ``--memory-limit``: a heap of the whole share took the
    process tree to 2.4 GB at a limit of 1.5 GB."""
    size = parse_memory_limit(limit)
    heap = parse_memory_limit(driver_memory(size))
    assert heap + JVM_OUTSIDE_HEAP <= size * (1 - RESERVE_SHARE)
    assert heap + JVM_OUTSIDE_HEAP > size * (1 - RESERVE_SHARE) - (1 << 20)  # the whole share, to the MiB


def test_a_small_limit_still_gives_spark_the_heap_it_needs() -> None:
    """Spark refuses to start on a heap under 450 MiB: a small limit gets the least it can run on."""
    assert driver_memory(parse_memory_limit("500MB")) == "512m"
