"""Ledgers as books keep them (issue 37): no status column, the sign in a Debit/Credit pair or
flag or written as accounting writes it, an empty header cell; and a side none of whose rows can
be read stops the run instead of reporting "ok". On each backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reconcile.files import write
from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import load_ledger, load_processor, reconcile
from toolkit.reconcile.backends import Backend

pytestmark = [
    pytest.mark.timeout(600),
    # py4j leaves its gateway's sockets to the garbage collector.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

PROCESSOR = (
    "merchantReferenceId,amount,currency,status\n"
    "A,10.00,EUR,success\n"
    "B,-5.00,EUR,success\n"
    "C,7.00,EUR,failure\n"
)


def _run(tmp_path: Path, ledger_text: str, backend: Backend, **mapping: str) -> dict[str, str]:
    """Reconcile ``ledger_text`` against ``PROCESSOR``: each key's category (``matched`` when it
    has none), and the amounts the ledger was read with."""
    ledger = load_ledger(write(tmp_path, "ledger.csv", ledger_text), mapping=mapping or None)
    processor = load_processor(write(tmp_path, "processor.csv", PROCESSOR))
    result = reconcile(ledger, processor, backend=backend)
    found = {key: "matched" for key in ("A", "B", "C")}
    for key, category in zip(
        result.exceptions["merchantReferenceId"], result.exceptions["category"], strict=True
    ):
        found[str(key)] = str(category)
    counts = result.counts[0]
    assert counts.rows == counts.matched + counts.exceptions + counts.rejected + counts.outside
    return found


def test_a_ledger_without_a_status_column_books_every_row(tmp_path: Path, backend: Backend) -> None:
    """A booking is a payment that happened: compared as ``success``, so the processor's failed
    payment that the books have is a ``status_mismatch``."""
    ledger = "merchantReferenceId,amount,currency\nA,10.00,EUR\nB,-5.00,EUR\nC,7.00,EUR\n"
    assert _run(tmp_path, ledger, backend) == {"A": "matched", "B": "matched", "C": "status_mismatch"}
    loaded = load_ledger(tmp_path / "ledger.csv")
    assert list(loaded.frame["status"]) == ["success"] * 3


def test_a_status_column_named_in_another_case_is_still_read(tmp_path: Path, backend: Backend) -> None:
    ledger = "merchantReferenceId,amount,currency,Status\nA,10.00,EUR,success\nB,-5.00,EUR,success\nC,7.00,EUR,failure\n"
    assert _run(tmp_path, ledger, backend) == {"A": "matched", "B": "matched", "C": "matched"}


def test_the_processor_still_needs_its_status(tmp_path: Path) -> None:
    path = write(tmp_path, "processor.csv", "merchantReferenceId,amount,currency\nA,10.00,EUR\n")
    with pytest.raises(InputError, match="required column 'status' missing"):
        load_processor(path)


@pytest.mark.parametrize(("written", "minor"), [("(5.00)", -500), ("5.00-", -500), ('"(1,234.50)"', -123450)])
def test_negative_amounts_as_accounting_writes_them(tmp_path: Path, written: str, minor: int) -> None:
    """SAP's trailing minus and the brackets of a statement are a negative amount, exactly."""
    path = write(tmp_path, "ledger.csv", f"merchantReferenceId,amount,currency\nB,{written},EUR\n")
    assert list(load_ledger(path).frame["amountMinor"]) == [minor]


@pytest.mark.parametrize("written", ["5.00--", "(-5.00)", "-5.00-", "()", "(5.00"])
def test_a_sign_written_twice_is_not_a_number(tmp_path: Path, written: str) -> None:
    path = write(
        tmp_path, "ledger.csv", f"merchantReferenceId,amount,currency\nA,10.00,EUR\nB,{written},EUR\n"
    )
    rejected = load_ledger(path).rejected
    assert list(rejected["detail"]) == [f"amount {written!r} is not a number"]


def test_a_debit_and_credit_pair_signs_the_amount(tmp_path: Path, backend: Backend) -> None:
    """No amount column, a Debit and a Credit column: debit positive, credit negative, a zero in
    the other column ignored; both written is no amount (rejected, saying both)."""
    ledger = (
        "merchantReferenceId,Debit,Credit,currency\n"
        "A,10.00,,EUR\n"
        "B,0.00,5.00,EUR\n"
        "C,7.00,0,EUR\n"
        "D,1.00,2.00,EUR\n"
    )
    found = _run(tmp_path, ledger, backend)
    assert found == {"A": "matched", "B": "matched", "C": "status_mismatch", "D": "rejected_row"}
    loaded = load_ledger(tmp_path / "ledger.csv")
    assert list(loaded.frame["amount"]) == ["10.00", "-5.00", "7.00"]  # as signed, before it is read
    assert list(loaded.frame["amountMinor"]) == [1000, -500, 700]
    assert list(loaded.rejected["detail"]) == ["amount 'debit 1.00 and credit 2.00' is not a number"]


def test_soll_and_haben_are_a_debit_and_credit_pair(tmp_path: Path) -> None:
    path = write(
        tmp_path, "ledger.csv", "merchantReferenceId;Soll;Haben;currency\nA;10,00;;EUR\nB;;5,00;EUR\n"
    )
    assert list(load_ledger(path).frame["amountMinor"]) == [1000, -500]


def test_a_debit_credit_flag_signs_the_amount(tmp_path: Path, backend: Backend) -> None:
    """DATEV's ``Soll/Haben-Kennzeichen`` (S positive, H negative; D/C and Dr/Cr alike), read
    with a decimal comma; an unknown flag cannot be read."""
    ledger = (
        "Belegfeld 1;Umsatz;WKZ Umsatz;Soll/Haben-Kennzeichen\nA;10,00;EUR;S\nB;5,00;EUR;H\nC;7,00;EUR;x\n"
    )
    found = _run(
        tmp_path, ledger, backend, merchantReferenceId="Belegfeld 1", amount="Umsatz", currency="WKZ Umsatz"
    )
    assert found == {"A": "matched", "B": "matched", "C": "rejected_row"}
    flags = write(
        tmp_path, "flags.csv", "merchantReferenceId,amount,currency,D/C\nA,1.00,EUR,Cr\nB,2.00,EUR,dr\n"
    )
    assert list(load_ledger(flags).frame["amountMinor"]) == [-100, 200]


def test_a_side_none_of_whose_rows_can_be_used_stops_the_run(tmp_path: Path, backend: Backend) -> None:
    """Every row rejected (here a status the toolkit does not know) is a file not read as
    payments: an input error naming the side and the first reasons, never an "ok"."""
    ledger = "merchantReferenceId,amount,currency,status\nA,10.00,EUR,Payment\nB,-5.00,EUR,Payment\n"
    with pytest.raises(
        InputError, match=r"none of the ledger's 2 rows can be used; the first: row 2: status 'Payment'"
    ):
        _run(tmp_path, ledger, backend)


def test_one_usable_row_is_enough_to_run(tmp_path: Path, backend: Backend) -> None:
    ledger = "merchantReferenceId,amount,currency,status\nA,10.00,EUR,success\nB,x,EUR,success\n"
    found = _run(tmp_path, ledger, backend)
    assert found["A"] == "matched" and found["B"] == "rejected_row"


# A QuickBooks "Transaction Detail by Account" export: a title above, and an empty header cell
# over the account names of its first column.
QUICKBOOKS = (
    "Transaction Detail by Account\n"
    "Acme Ltd\n"
    '"May 1-31, 2025"\n'
    "\n"
    ",Date,Transaction Type,Num,Name,Memo/Description,Split,Amount,Currency\n"
    "Checking,,,,,,,,\n"
    ",05/01/2025,Payment,A,Customer A,,Accounts Receivable,10.00,EUR\n"
    ",05/02/2025,Payment,B,Customer B,,Accounts Receivable,-5.00,EUR\n"
)


def test_an_empty_header_cell_is_named_by_its_place(tmp_path: Path, backend: Backend) -> None:
    path = write(tmp_path, "ledger.csv", QUICKBOOKS)
    loaded = load_ledger(path, mapping={"merchantReferenceId": "Num"})
    assert loaded.described.columns[0] == "column 1"
    found = _run(tmp_path, QUICKBOOKS, backend, merchantReferenceId="Num")
    # The account's heading line ("Checking") is the report's own line, left out (its layout),
    # and B's negative Payment is money returned (books read the sign).
    assert found == {"A": "matched", "B": "matched", "C": "missing_in_ledger"}


def test_the_command_says_what_is_wrong_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file the command cannot reconcile is exit 2 with one line, never a traceback (exit 1 is
    for findings), and no report."""
    ledger = write(tmp_path, "ledger.csv", QUICKBOOKS)  # mapped, the statuses say "Payment"
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    out = tmp_path / "out"
    argv = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(out)]
    mapped = [
        "--ledger-map",
        "merchantReferenceId=Num,status=Transaction Type",
        "--ledger-date-format",
        "%m/%d/%Y",
    ]
    code = main([*argv, *mapped])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "none of the ledger's 2 rows can be used" in err
    assert not out.exists() or not any(out.iterdir())


def test_an_engine_error_while_reading_a_file_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever else DuckDB cannot read in a file is an input error naming it (exit 2), not the
    engine's traceback (exit 1, the code of findings): the engine's words, on one line. DuckDB is
    made to fail as it did on the empty header cell, which no longer fails."""
    import duckdb

    from toolkit.reconcile.backends.duckdb import DuckDBBackend

    def fails(self: DuckDBBackend, described: object, wanted: list[str]) -> None:
        raise duckdb.ParserException('Parser Error: zero-length delimited identifier\n\nLINE 1: ... ""')

    monkeypatch.setattr(DuckDBBackend, "read", fails)
    path = write(tmp_path, "ledger.csv", "merchantReferenceId,amount,currency\nA,10.00,EUR\n")
    with pytest.raises(
        InputError, match=r"ledger.csv: cannot be read: Parser Error: zero-length delimited identifier$"
    ):
        _ = load_ledger(path).frame
