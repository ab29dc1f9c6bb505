"""A run replaces only the files it wrote: never an input, a user's file, or one changed since.

Each case was a file lost before the output record (``toolkit.output_record``): the report removed
or overwrote what was in its folder, whoever made it, after a run that said ``ok``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.errors import OutputError
from toolkit.output_record import RECORD_NAME, OutputRecord, claim, file_sha256
from toolkit.views import write_frame

LEDGER = "merchantReferenceId,amount,currency,status\nm1,12.30,USD,success\nm2,5.00,USD,success\n"
PROCESSOR = (
    "orderId,merchantReferenceId,customerId,paymentMethodType,paymentInstrumentId,amount,currency,"
    "pricingAmount,pricingCurrency,status,createTime,updateTime\n"
    "o1,m1,c1,CARD,pi1,12.30,USD,12.30,USD,success,1700000000000,1700000000001\n"
)
#: A EUR order charged in USD: compared at the reference rate, so the report writes fx.csv.
FX_LEDGER = "merchantReferenceId,amount,currency,status\nm1,100.00,EUR,success\n"
FX_PROCESSOR = PROCESSOR.replace("12.30,USD,12.30,USD", "108.00,USD,108.00,USD")
RATES = "date,base,quote,rate\n2023-11-14,EUR,USD,1.08\n"


def reconcile(*args: str) -> int:
    return main(["reconcile", *args])


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_ledger_named_like_a_file_the_report_removes_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "d"
    ledger = put(d / "states.csv", LEDGER)
    processor = put(d / "p.csv", PROCESSOR)
    code = reconcile("--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(d))
    assert code == 2
    err = capsys.readouterr().err
    assert "states.csv" in err and err.count("\n") == 1
    assert ledger.read_text(encoding="utf-8") == LEDGER
    assert not (d / "report.html").exists()  # nothing written: refused before anything


def test_inputs_named_like_the_reports_files_are_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "d"
    ledger = put(d / "exceptions.csv", LEDGER)
    processor = put(d / "summary.csv", PROCESSOR)
    code = reconcile("--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(d))
    assert code == 2
    assert "exceptions.csv" in capsys.readouterr().err
    assert ledger.read_text(encoding="utf-8") == LEDGER
    assert processor.read_text(encoding="utf-8") == PROCESSOR
    assert sorted(p.name for p in d.iterdir()) == ["exceptions.csv", "summary.csv"]


@pytest.mark.parametrize("ledger_text", [FX_LEDGER, LEDGER], ids=["report-writes-fx", "report-removes-fx"])
def test_a_rates_file_in_the_output_folder_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ledger_text: str
) -> None:
    d = tmp_path / "d"
    rates = put(d / "fx.csv", RATES)
    ledger = put(tmp_path / "ledger.csv", ledger_text)
    processor = put(tmp_path / "p.csv", FX_PROCESSOR if ledger_text == FX_LEDGER else PROCESSOR)
    code = reconcile(
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--fx-rates",
        str(rates),
        "--output-dir",
        str(d),
    )
    assert code == 2
    assert "fx.csv" in capsys.readouterr().err
    assert rates.read_text(encoding="utf-8") == RATES


def test_a_folder_reused_replaces_the_toolkits_own_files(tmp_path: Path) -> None:
    """The same --output-dir night after night works: the toolkit's files are in the record."""
    d = tmp_path / "d"
    ledger, processor = put(tmp_path / "l.csv", FX_LEDGER), put(tmp_path / "p.csv", FX_PROCESSOR)
    rates = put(tmp_path / "rates.csv", RATES)
    assert (
        reconcile(
            "--ledger",
            str(ledger),
            "--processor",
            str(processor),
            "--fx-rates",
            str(rates),
            "--output-dir",
            str(d),
        )
        == 0
    )
    assert (d / "fx.csv").exists()
    record = json.loads((d / RECORD_NAME).read_text(encoding="utf-8"))["files"]
    assert record["report.html"]["sha256"] == file_sha256(d / "report.html")
    assert "fx.csv" in record
    # A run without rates removes the last run's fx.csv (the toolkit's own), and the record forgets it.
    assert reconcile("--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(d)) == 0
    assert not (d / "fx.csv").exists()
    assert "fx.csv" not in json.loads((d / RECORD_NAME).read_text(encoding="utf-8"))["files"]


def test_a_report_edited_by_hand_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "d"
    ledger, processor = put(tmp_path / "l.csv", LEDGER), put(tmp_path / "p.csv", PROCESSOR)
    args = ("--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(d))
    assert reconcile(*args) == 0
    capsys.readouterr()
    (d / "summary.csv").write_text("the controller's notes\n", encoding="utf-8")
    assert reconcile(*args) == 2
    err = capsys.readouterr().err
    assert "summary.csv changed since the toolkit wrote it" in err
    assert (d / "summary.csv").read_text(encoding="utf-8") == "the controller's notes\n"


def test_a_users_file_of_a_reports_name_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "d"
    put(d / "report.xlsx", "mine")
    ledger, processor = put(tmp_path / "l.csv", LEDGER), put(tmp_path / "p.csv", PROCESSOR)
    assert reconcile("--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(d)) == 2
    assert "report.xlsx was not written by the toolkit" in capsys.readouterr().err
    assert (d / "report.xlsx").read_text() == "mine"


def test_a_hard_link_to_an_input_is_the_input(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    ledger = put(tmp_path / "ledger.csv", LEDGER)
    (d / "exceptions.csv").hardlink_to(ledger)
    record = OutputRecord.read(d)
    with pytest.raises(OutputError, match="is an input of this run"):
        record.claim(["exceptions.csv"], inputs=[ledger])


def test_a_damaged_record_fails_closed(tmp_path: Path) -> None:
    put(tmp_path / RECORD_NAME, "{not json")
    put(tmp_path / "report.html", "x")
    with pytest.raises(OutputError, match="cannot be read as the toolkit's record"):
        claim(tmp_path, ["report.html"])


def test_write_frame_keeps_a_users_file(tmp_path: Path) -> None:
    put(tmp_path / "payments.csv", "mine")
    frame = pd.DataFrame({"merchantReferenceId": ["m1"], "amount": ["1.00"]})
    with pytest.raises(OutputError, match=r"payments\.csv was not written by the toolkit"):
        write_frame(frame, tmp_path, "payments.csv")
    assert (tmp_path / "payments.csv").read_text() == "mine"
    (tmp_path / "payments.csv").unlink()
    assert write_frame(frame, tmp_path, "payments.csv") == tmp_path / "payments.csv"
    assert write_frame(frame.assign(amount=["2.00"]), tmp_path, "payments.csv") is not None  # its own


def test_a_notebook_run_keeps_its_input_and_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before the kernel starts: the ledger in the folder is the report's exceptions.csv."""
    d = tmp_path / "d"
    ledger = put(d / "exceptions.csv", LEDGER)
    code = main(["run", "reconciliation_report", "-p", "ledger_path", str(ledger), "--output-dir", str(d)])
    assert code == 2
    assert "exceptions.csv is an input of this run" in capsys.readouterr().err
    assert ledger.read_text(encoding="utf-8") == LEDGER
    assert sorted(p.name for p in d.iterdir()) == ["exceptions.csv"]


def test_a_notebook_run_keeps_a_users_file_of_its_outputs_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """test_payments would replace a user's payments.csv: refused before any payment is sent."""
    d = tmp_path / "d"
    put(d / "payments.csv", "mine")
    assert main(["run", "test_payments", "--output-dir", str(d)]) == 2
    assert "payments.csv was not written by the toolkit" in capsys.readouterr().err
    assert (d / "payments.csv").read_text() == "mine"
    assert not (tmp_path / "toolkit-home" / "journal").exists()  # nothing journaled, nothing sent
