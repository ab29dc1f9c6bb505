"""run.json beside each run, and reports/index.html listing the runs with a chart per track."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest

from tests.reconcile.tracks import sides
from toolkit.cli import main
from toolkit.runlog import counts_from_folder, file_hashes, read_manifests, reports_root, write_index


def reconcile_into(folder: Path, output: Path, *extra: str) -> int:
    return main(
        [
            "reconcile",
            "--ledger",
            str(folder / "ledger.csv"),
            "--processor",
            str(folder / "processor.csv"),
            "--output-dir",
            str(output),
            *extra,
        ]
    )


def test_tracked_runs_write_run_json_and_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    data = tmp_path / "data"
    ledger, processor = sides(data, {"c": "5.00 USD success", "x": "1.00 USD success"}, {})
    track = ("--track", "nightly", "--max-age", "1")
    assert reconcile_into(data, reports / "reconcile" / "d1", *track, "--as-of", "2026-11-01") == 0
    assert reconcile_into(data, reports / "reconcile" / "d3", *track, "--as-of", "2026-11-03") == 1
    assert reconcile_into(data, reports / "reconcile" / "plain") == 0  # untracked: no run.json
    capsys.readouterr()
    assert not (reports / "reconcile" / "plain" / "run.json").exists()

    manifest = json.loads((reports / "reconcile" / "d3" / "run.json").read_text())
    assert manifest["kind"] == "command" and manifest["name"] == "reconcile"
    assert manifest["exitCode"] == 1 and manifest["status"] == "findings"
    assert "older than max-age 1 days" in manifest["reason"]
    assert (
        manifest["track"] == "nightly" and manifest["run"] == 2 and manifest["asOf"] == "2026-11-03T23:59:59Z"
    )
    assert manifest["counts"] == {"exceptions": 2, "new": 0, "open": 2, "acknowledged": 0, "resolved": 0}
    assert manifest["parameters"]["max_age"] == 1 and manifest["parameters"]["ledger"] == str(ledger)
    assert [f["sha256"] for i in manifest["inputs"] for f in i["files"]] == [
        hashlib.sha256(ledger.read_bytes()).hexdigest(),
        hashlib.sha256(processor.read_bytes()).hexdigest(),
    ]
    assert manifest["started"] <= manifest["ended"]
    assert {"age": "2-7 days", "unacknowledged": 2, "acknowledged": 0} in manifest["ageBuckets"]

    page = (reports / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr><td>.*?</tr>", page)
    assert len(rows) == 2  # the two tracked runs, newest first
    assert 'href="reconcile/d3/report.html"' in rows[0] and 'class="findings"' in rows[0]
    assert 'href="reconcile/d1/report.html"' in rows[1] and 'class="ok"' in rows[1]
    assert "nightly run 2" in rows[0] and "2 exceptions, 0 new, 2 open" in rows[0]
    assert "<h2>Track nightly</h2>" in page and page.count("<rect ") == 2  # one bar segment per run
    assert "<script" not in page and "default-src 'none'" in page  # offline, nothing fetched


def test_a_failed_tracked_run_writes_no_run_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    sides(data, {"c": "5.00 USD success"}, {})
    assert reconcile_into(data, tmp_path / "reports" / "a", "--track", "t", "--as-of", "2026-11-02") == 0
    assert reconcile_into(data, tmp_path / "reports" / "b", "--track", "t", "--as-of", "2026-11-01") == 2
    capsys.readouterr()
    assert not (tmp_path / "reports" / "b").exists()
    assert [m["run"] for _, m in read_manifests(tmp_path / "reports")] == [1]


def test_index_skips_unreadable_manifests_and_needs_a_reports_folder(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    (root / "x" / "1").mkdir(parents=True)
    (root / "x" / "1" / "run.json").write_text("{not json")
    (root / "x" / "2").mkdir()
    (root / "x" / "2" / "run.json").write_text(
        json.dumps(
            {"kind": "notebook", "name": "<b>nb</b>", "started": "2026-11-01T00:00:00Z", "exitCode": 2}
        )
    )
    page = write_index(root).read_text()
    assert "&lt;b&gt;nb&lt;/b&gt;" in page and 'class="error"' in page and page.count("<tr><td>") == 1
    assert reports_root(root / "x" / "2") == root
    assert reports_root(tmp_path / "elsewhere") is None


def test_an_input_that_cannot_be_read_is_recorded_with_its_reason(tmp_path: Path) -> None:
    """The hashes are taken after the run: an input the run failed to read made them fail too,
    so the failed run had no run.json and was missing from the index. (/proc/self/mem is a file
    that even root cannot read from its start.)"""
    readable = tmp_path / "ledger.csv"
    readable.write_text("merchantReferenceId\n")
    assert file_hashes([readable, "/proc/self/mem", tmp_path / "missing.csv"]) == [
        {"path": str(readable), "sha256": hashlib.sha256(readable.read_bytes()).hexdigest()},
        {"path": "/proc/self/mem", "error": "cannot be read (Input/output error)"},
    ]


def test_a_notebooks_counts_leave_the_rows_for_information_out(tmp_path: Path) -> None:
    """run.json and the index said 28 exceptions where the result line said 15: the 13 rows in
    transit of exceptions.csv were counted as exceptions."""
    (tmp_path / "exceptions.csv").write_text(
        "merchantReferenceId,category,severity\n"
        "A-1,missing_in_processor,exception\nA-2,in_transit,info\nA-3,within_tolerance,info\n"
        "A-4,rejected_row,exception\n",
        encoding="utf-8",
    )
    assert counts_from_folder(tmp_path)["counts"] == {"exceptions": 2}


def reading_notebook(folder: Path) -> Path:
    """A notebook that reads the file its ``data_path`` names (by default ``data/books.csv`` in its
    own folder, as the toolkit's notebooks name their sample ledger)."""
    book = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    book.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.cells = [
        nbformat.v4.new_code_cell(  # type: ignore[no-untyped-call]
            'data_path = "data/books.csv"\noutput_dir = ""', metadata={"tags": ["parameters"]}
        ),
        nbformat.v4.new_code_cell("print(open(data_path).read())"),  # type: ignore[no-untyped-call]
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reading.ipynb"
    nbformat.write(book, str(path))  # type: ignore[no-untyped-call]
    return path


@pytest.mark.slow
def test_a_notebook_run_records_the_hash_of_the_inputs_it_read_by_default_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = reading_notebook(tmp_path / "notebooks")
    default = tmp_path / "notebooks" / "data" / "books.csv"
    default.parent.mkdir(parents=True)
    default.write_text("the sample books\n", encoding="utf-8")
    assert main(["run", str(notebook), "--output-dir", str(tmp_path / "first")]) == 0
    manifest = json.loads((tmp_path / "first" / "run.json").read_text())
    assert manifest["parameters"] == {}
    assert manifest["inputs"] == [
        {"path": str(default.resolve()), "sha256": hashlib.sha256(default.read_bytes()).hexdigest()}
    ]
    # One given is relative to where the command runs, and replaces the default.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.csv").write_text("my books\n", encoding="utf-8")
    assert main(["run", str(notebook), "-p", "data_path", "mine.csv", "--output-dir", "second"]) == 0
    manifest = json.loads((tmp_path / "second" / "run.json").read_text())
    assert manifest["inputs"] == [
        {"path": str(tmp_path / "mine.csv"), "sha256": hashlib.sha256(b"my books\n").hexdigest()}
    ]
    capsys.readouterr()
