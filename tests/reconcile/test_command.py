"""``toolkit reconcile``: files written, summary printed, exit codes 0 / 1 / 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reconcile.test_inputs import SANDBOX_EXPORT
from toolkit.cli import main

LEDGER = (
    "merchantReferenceId,amount,currency,status\n"
    "m1,12.3,USD,1\nm2,1200,JPY,pending\nm3,1.25,KWD,5\nm4,9.99,USD,success\n"
)


def files(tmp_path: Path) -> tuple[Path, Path]:
    ledger, processor = tmp_path / "ledger.csv", tmp_path / "export.csv"
    ledger.write_text(LEDGER, encoding="utf-8")
    processor.write_text(SANDBOX_EXPORT, encoding="utf-8")
    return ledger, processor


def test_completes_and_writes_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, processor = files(tmp_path)
    out = tmp_path / "out"
    code = main(["reconcile", "--ledger", str(ledger), "--processor", str(processor),
                 "--output-dir", str(out), "--environment", "embedded sandbox"])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "exceptions.csv", "report.html", "report.xlsx", "summary.csv"]
    printed = capsys.readouterr().out
    assert printed.startswith("Data from: embedded sandbox")
    assert "missing_in_processor" in printed and "1 exceptions" in printed


def test_default_output_dir_is_dated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, processor = files(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["reconcile", "--ledger", str(ledger), "--processor", str(processor)]) == 0
    (folder,) = (tmp_path / "reports" / "reconcile").iterdir()
    assert folder.name.endswith("Z") and (folder / "report.html").exists()


def test_too_many_exceptions_exits_1(tmp_path: Path) -> None:
    ledger, processor = files(tmp_path)
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor),
            "--output-dir", str(tmp_path / "o")]
    assert main([*args, "--max-exceptions", "0"]) == 1
    assert main([*args, "--max-exceptions", "1"]) == 0


def test_tolerance_and_mapping(tmp_path: Path) -> None:
    ledger = tmp_path / "books.csv"
    ledger.write_text("Ref,Total,Cur,State\nm1,12.31,USD,success\n", encoding="utf-8")
    _, processor = files(tmp_path)
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor),
            "--output-dir", str(tmp_path / "o"), "--max-exceptions", "2",
            "--ledger-map", '{"merchantReferenceId": "Ref", "amount": "Total", '
            '"currency": "Cur", "status": "State"}']
    # m2, m3 missing in the ledger; m1 off by one cent unless tolerated.
    assert main(args) == 1
    assert main([*args, "--amount-tolerance", "1"]) == 0


def test_unusable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, processor = files(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("merchantReferenceId,amount,status\nm1,1,success\n", encoding="utf-8")
    assert main(["reconcile", "--ledger", str(bad), "--processor", str(processor)]) == 2
    assert "bad.csv: required column 'currency'" in capsys.readouterr().err
    assert main(["reconcile", "--ledger", str(tmp_path / "none.csv"),
                 "--processor", str(processor)]) == 2
    assert "none.csv: file not found" in capsys.readouterr().err
    assert main(["reconcile", "--ledger", str(ledger), "--processor", str(processor),
                 "--ledger-map", "{not json"]) == 2
    assert "--ledger-map" in capsys.readouterr().err
