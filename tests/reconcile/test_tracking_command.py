"""``toolkit reconcile --track`` and its sub-commands: thresholds, reports, refusals, the audit
chain under tampering, and two processes at once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from tests.reconcile.tracks import run, sides
from toolkit.cli import main
from toolkit.errors import TrackIntegrityError
from toolkit.reconcile import (
    EXCEPTION_COLUMNS,
    TRACKING_COLUMNS,
    acknowledge,
    load_ledger,
    load_processor,
    reconcile,
    track_history,
    verify_track,
)
from toolkit.reconcile.tracking.store import SIGNOFF_COLUMNS, os_user, store_path

# ---------------------------------------------------------------------------------------------
# The command


def cli(folder: Path, *extra: str, output: str = "out") -> list[str]:
    return [
        "reconcile",
        "--ledger",
        str(folder / "ledger.csv"),
        "--processor",
        str(folder / "processor.csv"),
        "--output-dir",
        str(folder / output),
        *extra,
    ]


def test_command_thresholds_count_new_and_open_and_max_age(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sides(tmp_path, {"c": "5.00 USD success", "x": "1.00 USD success"}, {})
    assert main(cli(tmp_path, "--track", "n", "--as-of", "2026-11-01", "--max-exceptions", "1")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        "findings: 2 exceptions (2 new, 0 open, 0 acknowledged; 0 resolved), track n run 1"
    )
    frame = pd.read_csv(tmp_path / "out" / "exceptions.csv", dtype=str)
    c_id = str(frame.loc[frame["merchantReferenceId"] == "c", "exceptionId"].iloc[0])
    assert main(["reconcile", "ack", "--track", "n", c_id, "--note", "known", "--by", "ana"]) == 0
    assert capsys.readouterr().out.strip() == f"ok: 1 exception(s) of track n acknowledged: {c_id}"
    # One acknowledged, one open: within --max-exceptions 1; both 5 days old.
    assert main(cli(tmp_path, "--track", "n", "--as-of", "2026-11-06", "--max-exceptions", "1")) == 0
    assert (
        capsys.readouterr()
        .out.strip()
        .splitlines()[-1]
        .startswith("ok: 2 exceptions (0 new, 1 open, 1 acknowledged; 0 resolved), track n run 2; report: ")
    )
    assert main(cli(tmp_path, "--track", "n", "--as-of", "2026-11-06", "--max-age", "5")) == 0
    capsys.readouterr()
    assert main(cli(tmp_path, "--track", "n", "--as-of", "2026-11-07", "--max-age", "5")) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "1 unacknowledged exception(s) older than max-age 5 days (oldest 6)" in last
    # The same run without a track: every exception counts, as before.
    assert main(cli(tmp_path, "--max-exceptions", "1")) == 1


def test_command_reports_show_states(tmp_path: Path) -> None:
    sides(tmp_path, {"c": "5.00 USD success", "b": "2.00 USD success"}, {"b": "2.50 USD success"})
    assert main(cli(tmp_path, "--track", "r", "--as-of", "2026-11-01", output="one")) == 0
    sides(tmp_path, {"b": "2.00 USD success"}, {"b": "2.50 USD success"})
    assert main(cli(tmp_path, "--track", "r", "--as-of", "2026-11-04", output="two")) == 0
    out = tmp_path / "two"
    assert sorted(p.name for p in out.iterdir()) == [
        ".toolkit-written.json",  # what the toolkit wrote here, with their sha256
        "ages.csv",
        "exceptions.csv",
        "exceptions.parquet",
        "report.html",
        "report.xlsx",
        "resolved.csv",
        "run.json",
        "states.csv",
        "summary.csv",
    ]
    exceptions = pd.read_csv(out / "exceptions.csv", dtype=str, keep_default_na=False)
    assert list(exceptions.columns) == [*EXCEPTION_COLUMNS, *TRACKING_COLUMNS]
    assert exceptions[["merchantReferenceId", "state", "firstSeen", "ageDays"]].values.tolist() == [
        ["b", "open", "2026-11-01T23:59:59Z", "3"]
    ]
    states_csv = pd.read_csv(out / "states.csv", dtype=str).values.tolist()
    assert states_csv == [
        ["missing_in_processor", "0", "0", "0", "1"],
        ["amount_mismatch", "0", "1", "0", "0"],
    ]
    ages = pd.read_csv(out / "ages.csv", dtype=str).values.tolist()
    assert ages[1] == ["2-7 days", "1", "0"]
    resolved = pd.read_csv(out / "resolved.csv", dtype=str)
    assert resolved[["merchantReferenceId", "category", "resolvedAt"]].values.tolist() == [
        ["c", "missing_in_processor", "2026-11-04T23:59:59Z"]
    ]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Since the last run: track r" in html and "first seen 2026-11-01, 3 days" in html
    assert '<table id="ages">' in html and '<table id="resolved">' in html
    assert str(exceptions["exceptionId"].iloc[0]) in html
    book = openpyxl.load_workbook(out / "report.xlsx")
    assert book.sheetnames == ["Summary", "amount_mismatch", "resolved"]
    header = [c.value for c in book["amount_mismatch"][1]]
    assert header[-5:] == list(TRACKING_COLUMNS)
    row = [c.value for c in book["amount_mismatch"][2]]
    assert row[header.index("state")] == "open" and row[header.index("ageDays")] == 3
    summary = [[c.value for c in r] for r in book["Summary"].iter_rows()]
    assert ["age", "unacknowledged", "acknowledged", None, None, None] in summary
    assert ["2-7 days", 1, 0, None, None, None] in summary
    assert [c.value for c in book["resolved"][2]][:3] == [
        resolved.loc[0, "exceptionId"],
        "c",
        "missing_in_processor",
    ]
    with zipfile.ZipFile(out / "report.xlsx") as archive:  # the amount is exact text in the XML
        assert "<v>5.00</v>" in archive.read("xl/worksheets/sheet3.xml").decode()


def test_command_history_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sides(tmp_path, {"c": "5.00 USD success"}, {})
    for day in ("2026-11-01", "2026-11-02"):
        assert main(cli(tmp_path, "--track", "h", "--as-of", day)) == 0
    capsys.readouterr()
    assert main(["reconcile", "history", "--track", "h"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == [
        "run",
        "asOf",
        "recorded",
        "exceptions",
        "new",
        "open",
        "acknowledged",
        "resolved",
        "matched",
        "rerunOf",
    ]
    assert lines[1].split()[:2] == ["1", "2026-11-01T23:59:59Z"] and lines[1].split()[3:8] == [
        "1",
        "1",
        "0",
        "0",
        "0",
    ]
    assert lines[2].split()[:2] == ["2", "2026-11-02T23:59:59Z"] and lines[2].split()[3:8] == [
        "1",
        "0",
        "1",
        "0",
        "0",
    ]
    assert lines[-1] == "ok: track h: 2 run(s)"
    assert main(["reconcile", "verify", "--track", "h"]) == 0
    assert capsys.readouterr().out.strip() == "ok: track h: 3 audit log entries verified"


def test_command_signoffs_lists_who_signed_what_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sides(tmp_path, {"c": "5.00 USD success"}, {})
    assert main(cli(tmp_path, "--track", "s", "--as-of", "2026-11-01")) == 0
    assert main(["reconcile", "signoffs", "--track", "s"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-2:] == [
        "(no sign-offs)",
        "ok: track s: 0 sign-off(s)",
    ]
    c_id = str(pd.read_csv(tmp_path / "out" / "exceptions.csv", dtype=str)["exceptionId"].iloc[0])
    assert main(["reconcile", "ack", "--track", "s", c_id, "--note", "sent late", "--by", "ana"]) == 0
    assert main(["reconcile", "ack", "--track", "s", c_id, "--note", "fine", "--by", "bo"]) == 2
    one_error(capsys, f"{c_id} is already acknowledged by ana at ", "reopen it first")
    assert main(["reconcile", "reopen", "--track", "s", c_id, "--note", "disputed", "--by", "cy"]) == 0
    capsys.readouterr()
    assert main(["reconcile", "signoffs", "--track", "s"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == list(SIGNOFF_COLUMNS)
    assert lines[1].split()[1:] == [
        "acknowledged",
        c_id,
        "missing_in_processor",
        "c",
        "ana",
        os_user(),  # the account that signed, beside the --by it gave
        "sent",
        "late",
        "1",
    ]
    assert lines[2].split()[1:] == [
        "reopened",
        c_id,
        "missing_in_processor",
        "c",
        "cy",
        os_user(),
        "disputed",
        "1",
    ]
    assert lines[-1] == "ok: track s: 2 sign-off(s)"
    assert main(["reconcile", "signoffs", "--track", "nope"]) == 2
    one_error(capsys, "unknown track 'nope'")


def one_error(capsys: pytest.CaptureFixture[str], *parts: str) -> None:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for part in parts:
        assert part in lines[0], lines[0]


def entries(track: str) -> int:
    with sqlite3.connect(store_path()) as db:
        return int(db.execute("SELECT count(*) FROM entries WHERE track = ?", (track,)).fetchone()[0])


def test_command_refusals_exit_2_and_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sides(tmp_path, {"c": "5.00 USD success"}, {})
    assert main(["reconcile", "verify", "--track", "nope"]) == 2
    one_error(capsys, "no reconciliation store", "no track has been run yet")
    assert main(cli(tmp_path, "--track", "one", "--as-of", "2026-11-01")) == 0
    assert main(cli(tmp_path, "--track", "two", "--as-of", "2026-11-01")) == 0
    capsys.readouterr()
    frame = pd.read_csv(tmp_path / "out" / "exceptions.csv", dtype=str)
    of_two = str(frame["exceptionId"].iloc[0])
    before = (entries("one"), entries("two"))

    assert main(["reconcile", "history", "--track", "nope"]) == 2
    one_error(capsys, "unknown track 'nope'", "one, two")
    assert main(["reconcile", "ack", "--track", "one", "E0000000000000000", "--note", "x"]) == 2
    one_error(capsys, "unknown exception id E0000000000000000")
    assert main(["reconcile", "ack", "--track", "one", of_two, "--note", "x"]) == 2
    one_error(capsys, f"{of_two} is an exception of track two, not of track one")
    assert main(["reconcile", "reopen", "--track", "two", of_two, "--note", "x"]) == 2
    one_error(capsys, "is not acknowledged")
    assert main(["reconcile", "ack", "--track", "two", of_two, "--note", "  "]) == 2
    one_error(capsys, "a note is required")
    assert main(["reconcile", "ack", "--track", "two", of_two, "--note", "ok", "--by", "  "]) == 2
    one_error(capsys, "who signs off is required")  # it was recorded as "unknown"
    assert main(cli(tmp_path, "--track", "bad name!")) == 2
    one_error(capsys, "track name 'bad name!'")
    assert main(cli(tmp_path, "--max-age", "3")) == 2  # --as-of alone is a run's cut-off
    one_error(capsys, "--max-age needs --track")
    assert main(cli(tmp_path, "--track", "one", "--as-of", "2026-13-01")) == 2
    one_error(capsys, "as-of '2026-13-01'")
    assert main(cli(tmp_path, "--track", "one", "--as-of", "2026-10-01")) == 2
    one_error(capsys, "go forward in time")
    # A report that cannot be written: nothing recorded either.
    (tmp_path / "taken").write_text("a file", encoding="utf-8")
    assert main(cli(tmp_path, "--track", "one", "--as-of", "2026-11-05", output="taken")) == 2
    one_error(capsys, "taken")
    assert (entries("one"), entries("two")) == before
    # An ack for several ids is all or nothing.
    assert main(["reconcile", "ack", "--track", "two", of_two, "E0000000000000000", "--note", "x"]) == 2
    one_error(capsys, "unknown exception id E0000000000000000")
    assert (entries("one"), entries("two")) == before


def test_a_ledger_named_like_a_subcommand_is_a_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inputs are options: ``--ledger ack`` (here a Parquet folder named ack) is a ledger."""
    _, pro = sides(tmp_path, {}, {})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ack").mkdir()
    frame = pd.DataFrame(
        {"merchantReferenceId": ["c"], "amount": ["5.00"], "currency": ["USD"], "status": ["success"]}
    )
    frame.to_parquet(tmp_path / "ack" / "part-0.parquet")
    assert main(["reconcile", "--ledger", "ack", "--processor", str(pro), "--output-dir", "o"]) == 0
    exceptions = pd.read_csv(tmp_path / "o" / "exceptions.csv", dtype=str)
    assert exceptions[["merchantReferenceId", "category"]].values.tolist() == [["c", "missing_in_processor"]]


def test_missing_inputs_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["reconcile", "--ledger", "x.csv"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "error: toolkit reconcile: the following arguments are required: --processor "
        "(see toolkit reconcile --help)\n"
    )
    with pytest.raises(SystemExit) as stop:  # -1 exited 1, "more than --max-exceptions -1"
        main(["reconcile", "--ledger", "x.csv", "--processor", "y.csv", "--max-exceptions", "-1"])
    assert stop.value.code == 2
    assert "argument --max-exceptions: '-1': must be 0 or more" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The audit chain


def tracked_store(tmp_path: Path) -> None:
    ledger = {"c": "5.00 USD success"}
    first = run(tmp_path, ledger, {}, "2026-11-01", track="v")
    acknowledge("v", first.exceptions, note="known", by="ana")
    run(tmp_path, ledger, {}, "2026-11-02", track="v")
    run(tmp_path, ledger, {}, "2026-11-01", track="other")


def tamper(sql: str, *args: object) -> None:
    db = sqlite3.connect(store_path())
    with db:
        db.execute(sql, args)
    db.close()


def verify_fails(capsys: pytest.CaptureFixture[str], *parts: str) -> None:
    assert main(["reconcile", "verify", "--track", "v"]) == 2
    one_error(capsys, *parts)


def test_verify_names_a_changed_run_entry_and_refuses_further_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracked_store(tmp_path)
    assert verify_track("v") == 4
    # Run 2 (entry 4) says 5.00; make it say 4.00, as someone hiding a break would.
    tamper("UPDATE entries SET payload = replace(payload, '5.00', '4.00') WHERE track = 'v' AND number = 4")
    verify_fails(capsys, "track v: entry 4 (run 2 as of 2026-11-02T23:59:59Z) does not match its hash")
    assert verify_track("other") == 2  # another track is not affected
    sides(tmp_path, {"c": "5.00 USD success"}, {})
    assert main(cli(tmp_path, "--track", "v", "--as-of", "2026-11-03")) == 2
    one_error(capsys, "entry 4")
    assert not (tmp_path / "out").exists()  # refused before any report
    with pytest.raises(TrackIntegrityError):
        acknowledge("v", ["E0000000000000000"], note="x")


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (
            "UPDATE entries SET at = '2026-01-01T00:00:00Z' WHERE track = 'v' AND number = 3",
            "entry 3 (ack of 1",
        ),
        (
            "UPDATE entries SET hash = replace(hash, substr(hash, 1, 1), 'x') WHERE track = 'v' AND number = 2",
            "entry 2",
        ),
        ("UPDATE entries SET kind = 'reopen' WHERE track = 'v' AND number = 3", "entry 3"),
        ("DELETE FROM entries WHERE track = 'v' AND number = 3", "entry 3 is missing"),
        ("UPDATE entries SET track = 'other' WHERE track = 'v' AND number = 3", "entry 3 is missing"),
    ],
)
def test_verify_catches_every_kind_of_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sql: str, named: str
) -> None:
    tracked_store(tmp_path)
    tamper(sql)
    verify_fails(capsys, named)


def test_verify_catches_a_rewritten_entry_with_a_recomputed_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rewriting an entry and its own hash breaks the link from the entry after it."""
    from toolkit.reconcile.tracking.store import entry_hash

    tracked_store(tmp_path)
    db = sqlite3.connect(store_path())
    number, kind, at, payload, prev = db.execute(
        "SELECT number, kind, at, payload, prev_hash FROM entries WHERE track = 'v' AND number = 3"
    ).fetchone()
    forged = json.dumps({**json.loads(payload), "by": "someone else"}, sort_keys=True, separators=(",", ":"))
    with db:
        db.execute(
            "UPDATE entries SET payload = ?, hash = ? WHERE track = 'v' AND number = 3",
            (forged, entry_hash(number, "v", kind, at, prev, forged)),
        )
    db.close()
    verify_fails(capsys, "entry 4 (run 2", "does not follow entry 3")


def test_a_store_that_is_not_one_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = store_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")  # emptied: never taken for a new store
    sides(tmp_path, {"c": "5.00 USD success"}, {})
    assert main(cli(tmp_path, "--track", "v")) == 2
    one_error(capsys, "is not a reconciliation store")
    path.write_bytes(b"garbage " * 100)
    assert main(cli(tmp_path, "--track", "v")) == 2
    one_error(capsys, str(path))
    assert path.read_bytes() == b"garbage " * 100


def test_run_entries_hold_the_input_hashes(tmp_path: Path) -> None:
    led, pro = sides(tmp_path, {"c": "5.00 USD success"}, {})
    reconcile(load_ledger(led), load_processor(pro), track="v", as_of="2026-11-01")
    with sqlite3.connect(store_path()) as db:
        (payload,) = db.execute("SELECT payload FROM entries WHERE kind = 'run'").fetchone()
    inputs = json.loads(payload)["inputs"]
    import hashlib

    assert [i["files"][0]["sha256"] for i in inputs] == [
        hashlib.sha256(led.read_bytes()).hexdigest(),
        hashlib.sha256(pro.read_bytes()).hexdigest(),
    ]


def test_two_processes_at_once_neither_lose_nor_duplicate_a_run(tmp_path: Path) -> None:
    sides(tmp_path, {"c": "5.00 USD success"}, {"d": "1.00 USD success"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-B", "-m", "toolkit.cli", *cli(tmp_path, "--track", "both", output=f"o{i}")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], results
    history = track_history("both")
    assert list(history["run"]) == [1, 2, 3]
    # Runs recorded in the same second share a cut-off: the later one is a re-run of the earlier,
    # compared with the run before that cut-off. Only runs of the first cut-off see new ones.
    first = min(history["asOf"].tolist())
    for as_of, new, still_open in zip(
        history["asOf"].tolist(), history["new"].tolist(), history["open"].tolist(), strict=True
    ):
        assert (new, still_open) == ((2, 0) if as_of == first else (0, 2)), history
    assert verify_track("both") == 4
    printed = sorted(int(out.strip().splitlines()[-1].split(" run ")[1].split(";")[0]) for out, _ in results)
    assert printed == [1, 2, 3]


class _OneSecond:
    """``datetime`` whose ``now`` is always the same second: two runs started by one cron line."""

    @staticmethod
    def now(tz: object = None) -> pd.Timestamp:
        return pd.Timestamp("2026-11-27T02:00:00", tz="UTC")


def test_two_runs_in_the_same_second_each_keep_their_own_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tracks run in one second wrote one folder: the second's report replaced the first's,
    and both result lines named it."""
    import toolkit.cli.reconcile
    import toolkit.outputs

    for module in (toolkit.outputs, toolkit.cli.reconcile):
        monkeypatch.setattr(module, "datetime", _OneSecond, raising=False)
    sides(tmp_path, {"a": "5.00 USD success"}, {})
    monkeypatch.chdir(tmp_path)
    reports = []
    for track in ("eu", "us"):
        args = ["reconcile", "--ledger", "ledger.csv", "--processor", "processor.csv", "--track", track]
        assert main([*args, "--as-of", "2026-11-01"]) == 0
        reports.append(capsys.readouterr().out.strip().splitlines()[-1].rsplit("report: ", 1)[1])
    assert reports == [
        "reports/reconcile/20261127T020000Z/report.html",
        "reports/reconcile/20261127T020000Z-2/report.html",
    ]
    tracks = [json.loads((tmp_path / r).with_name("run.json").read_text())["track"] for r in reports]
    assert tracks == ["eu", "us"]


def test_an_output_that_cannot_be_written_leaves_no_partial_report_and_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder in the way of report.html left every other file of the report (exit 2, no run
    recorded); one in the way of run.json replaced the last good report with an unrecorded one."""
    sides(tmp_path, {"a": "5.00 USD success"}, {})
    (tmp_path / "blocked" / "report.html").mkdir(parents=True)
    assert main(cli(tmp_path, "--track", "b", "--as-of", "2026-11-01", output="blocked")) == 2
    one_error(capsys, "report.html: it is a folder")
    assert [p.name for p in (tmp_path / "blocked").iterdir()] == ["report.html"]
    assert main(["reconcile", "history", "--track", "b"]) == 2  # nothing recorded
    capsys.readouterr()

    assert main(cli(tmp_path, "--track", "m", "--as-of", "2026-11-01", output="kept")) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in (tmp_path / "kept").iterdir()}
    (tmp_path / "kept" / "run.json").unlink()
    (tmp_path / "kept" / "run.json").mkdir()
    sides(tmp_path, {"a": "6.00 USD success"}, {})
    assert main(cli(tmp_path, "--track", "m", "--as-of", "2026-11-02", output="kept")) == 2
    one_error(capsys, "run.json: it is a folder")
    after = {p.name: p.read_bytes() for p in (tmp_path / "kept").iterdir() if p.is_file()}
    assert after == {name: data for name, data in before.items() if name != "run.json"}
    assert len(track_history("m")) == 1


def test_an_interrupted_run_exits_2_in_one_line_and_records_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during a tracked run ended it with a traceback, and with exit 1 ("findings") when
    DuckDB took the signal."""
    import toolkit.reconcile.render.report

    sides(tmp_path, {"a": "5.00 USD success"}, {})

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(toolkit.reconcile.render.report, "render_html", interrupted)
    assert main(cli(tmp_path, "--track", "i", "--as-of", "2026-11-01")) == 2
    one_error(capsys, "toolkit reconcile: interrupted")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    assert main(["reconcile", "history", "--track", "i"]) == 2  # no run recorded
