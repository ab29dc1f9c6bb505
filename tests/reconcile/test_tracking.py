"""Tracked reconciliations in Python: lifecycle across runs, ages, sign-offs, the audit chain."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from tests.reconcile.information import with_information
from tests.reconcile.tracks import HEADER, run, sides
from toolkit.errors import TrackError, TrackIntegrityError
from toolkit.reconcile import (
    EXCEPTION_COLUMNS,
    TRACKING_COLUMNS,
    ReconciliationResult,
    acknowledge,
    load_ledger,
    load_processor,
    reconcile,
    reopen,
    select_period,
    track_history,
    track_result,
    track_signoffs,
    verify_track,
    write_report,
)
from toolkit.reconcile.tracking import findings
from toolkit.reconcile.tracking.store import store_path


def states(result: ReconciliationResult) -> dict[tuple[str, str], tuple[str, int]]:
    frame = result.exceptions
    return {
        (str(k), str(c)): (str(s), int(a))
        for k, c, s, a in zip(
            frame["merchantReferenceId"], frame["category"], frame["state"], frame["ageDays"], strict=True
        )
    }


def cell(result: ReconciliationResult, key: str, column: str) -> str:
    """The text of ``column`` of the one exception of ``key``."""
    frame = result.exceptions
    (found,) = frame.loc[frame["merchantReferenceId"] == key, column].tolist()
    return str(found)


def ident(result: ReconciliationResult, key: str) -> str:
    frame = result.exceptions
    (found,) = frame.loc[frame["merchantReferenceId"] == key, "exceptionId"]
    return str(found)


PAID = "10.00 USD success"


def test_lifecycle_over_four_runs(tmp_path: Path) -> None:
    # Day 1: b's amounts differ, c is not at the processor, d not in the books.
    ledger = {"a": PAID, "b": "20.00 USD success", "c": "5.00 USD success"}
    processor = {"a": PAID, "b": "21.00 USD success", "d": "7.00 USD success"}
    first = run(tmp_path, ledger, processor, "2026-11-01")
    assert states(first) == {
        ("b", "amount_mismatch"): ("new", 0),
        ("c", "missing_in_processor"): ("new", 0),
        ("d", "missing_in_ledger"): ("new", 0),
    }
    assert set(TRACKING_COLUMNS) <= set(first.exceptions.columns)
    assert first.tracking is not None and first.tracking.previous_run is None
    assert acknowledge("t", [ident(first, "c")], note="manual invoice, sent late", by="ana") == [
        ident(first, "c")
    ]
    assert acknowledge(
        "t", first.exceptions[first.exceptions["merchantReferenceId"] == "b"], note="disputed", by="bo"
    )

    # Day 3: the same facts, and e is a new break.
    ledger3 = {**ledger, "e": "3.00 USD success"}
    third = run(tmp_path, ledger3, processor, "2026-11-03")
    assert states(third) == {
        ("b", "amount_mismatch"): ("acknowledged", 2),
        ("c", "missing_in_processor"): ("acknowledged", 2),
        ("d", "missing_in_ledger"): ("open", 2),
        ("e", "missing_in_processor"): ("new", 0),
    }
    assert ident(third, "c") == ident(first, "c")  # stable across runs
    row = third.exceptions.set_index("merchantReferenceId").loc["c"]
    assert row["firstSeen"] == "2026-11-01T23:59:59Z"
    assert "acknowledged by ana" in row["stateReason"] and "sent late" in row["stateReason"]

    # Day 10: the processor's amount of b changes (the acknowledgement lapses, saying why), d is
    # booked (resolved), c's acknowledgement holds.
    processor10 = {**processor, "b": "22.00 USD success"}
    ledger10 = {**ledger3, "d": "7.00 USD success"}
    tenth = run(tmp_path, ledger10, processor10, "2026-11-10")
    assert states(tenth) == {
        ("b", "amount_mismatch"): ("open", 9),
        ("c", "missing_in_processor"): ("acknowledged", 9),
        ("e", "missing_in_processor"): ("open", 7),
    }
    reason = cell(tenth, "b", "stateReason")
    assert "lapsed" in reason and "processor_amount 21.00 -> 22.00" in reason
    assert tenth.tracking is not None
    resolved = tenth.tracking.resolved
    assert list(resolved["merchantReferenceId"]) == ["d"]
    assert resolved.iloc[0]["firstSeen"] == "2026-11-01T23:59:59Z"
    assert resolved.iloc[0]["lastSeen"] == "2026-11-03T23:59:59Z"
    assert resolved.iloc[0]["resolvedAt"] == "2026-11-10T23:59:59Z"
    assert tenth.tracking.state_counts() == {"new": 0, "open": 2, "acknowledged": 1, "resolved": 1}

    # Day 11: b's amount goes back, but a lapsed acknowledgement stays lapsed; d comes back: new,
    # first seen again today, its old streak over.
    processor11 = {**processor, "d": "7.00 USD success"}
    eleventh = run(tmp_path, ledger3, processor11, "2026-11-11")
    assert states(eleventh)[("b", "amount_mismatch")] == ("open", 10)
    assert "lapsed" in cell(eleventh, "b", "stateReason")
    assert states(eleventh)[("d", "missing_in_ledger")] == ("new", 0)
    assert eleventh.tracking is not None and eleventh.tracking.resolved.empty

    history = track_history("t")
    assert list(history["run"]) == [1, 2, 3, 4]
    assert list(history["new"]) == [3, 1, 0, 1]
    assert list(history["resolved"]) == [0, 0, 1, 0]
    assert verify_track("t") == 1 + 4 + 2  # the track, four runs, two acknowledgements


def test_reopen_and_acknowledging_from_a_frame(tmp_path: Path) -> None:
    ledger, processor = {"c": "5.00 USD success", "x": "1.00 USD success"}, dict[str, str]()
    first = run(tmp_path, ledger, processor, "2026-11-01")
    acknowledge("t", first.exceptions, note="all known")
    second = run(tmp_path, ledger, processor, "2026-11-02")
    assert {s for s, _ in states(second).values()} == {"acknowledged"}
    reopen("t", [ident(second, "x")], note="customer says it was charged", by="cy")
    third = run(tmp_path, ledger, processor, "2026-11-03")
    assert states(third) == {
        ("c", "missing_in_processor"): ("acknowledged", 2),
        ("x", "missing_in_processor"): ("open", 2),
    }
    assert "reopened by cy" in cell(third, "x", "stateReason")
    with pytest.raises(TrackError, match="is not acknowledged"):
        reopen("t", [ident(third, "x")], note="again")


def test_rerunning_a_day_changes_nothing(tmp_path: Path) -> None:
    ledger, processor = {"a": PAID, "c": "5.00 USD success"}, {"a": PAID, "d": "7.00 USD success"}
    run(tmp_path, ledger, processor, "2026-11-01")
    once = run(tmp_path, {"c": "5.00 USD success"}, processor, "2026-11-02")
    again = run(tmp_path, {"c": "5.00 USD success"}, processor, "2026-11-02")
    columns = [*EXCEPTION_COLUMNS, *TRACKING_COLUMNS]
    pd.testing.assert_frame_equal(once.exceptions[columns], again.exceptions[columns])
    assert once.tracking is not None and again.tracking is not None
    pd.testing.assert_frame_equal(once.tracking.resolved, again.tracking.resolved)
    assert again.tracking.rerun_of == 2 and again.tracking.previous_run == 1
    with pytest.raises(TrackError, match="go forward in time"):
        run(tmp_path, ledger, processor, "2026-10-31")
    assert list(track_history("t")["run"]) == [1, 2, 3]  # the refused run recorded nothing


def test_age_buckets(tmp_path: Path) -> None:
    # A break appears on each of these days; the last run is on day 40.
    days = {0: "k40", 10: "k30", 32: "k8", 33: "k7", 38: "k2", 39: "k1", 40: "k0"}
    books: dict[str, str] = {}
    result = None
    for day, key in days.items():
        books[key] = "1.00 USD success"
        when = (date(2026, 1, 1) + timedelta(days=day)).isoformat()
        result = run(tmp_path, dict(books), {}, when)
    assert result is not None and result.tracking is not None
    ages = {
        str(k): int(a)
        for k, a in zip(result.exceptions["merchantReferenceId"], result.exceptions["ageDays"], strict=True)
    }
    assert ages == {"k40": 40, "k30": 30, "k8": 8, "k7": 7, "k2": 2, "k1": 1, "k0": 0}
    acknowledge("t", [ident(result, "k8")], note="known")
    result = run(tmp_path, dict(books), {}, "2026-02-10")  # day 40 again: a re-run
    assert result.tracking is not None
    buckets = result.tracking.age_buckets().set_index("age")
    assert buckets["unacknowledged"].to_dict() == {
        "0-1 days": 2,
        "2-7 days": 2,
        "8-30 days": 1,
        "over 30 days": 1,
    }
    assert buckets["acknowledged"].to_dict() == {
        "0-1 days": 0,
        "2-7 days": 0,
        "8-30 days": 1,
        "over 30 days": 0,
    }


def test_verify_names_the_first_changed_entry_and_runs_are_refused(tmp_path: Path) -> None:
    books = {"c": "5.00 USD success"}
    run(tmp_path, books, {}, "2026-11-01")
    run(tmp_path, books, {}, "2026-11-02")
    assert verify_track("t") == 3
    with sqlite3.connect(store_path()) as db:
        db.execute("UPDATE entries SET payload = replace(payload, '5.00', '5.01') WHERE number = 2")
    db.close()
    with pytest.raises(
        TrackIntegrityError, match=r"entry 2 \(run 1 as of 2026-11-01T23:59:59Z\) does not match"
    ):
        verify_track("t")
    with pytest.raises(TrackIntegrityError, match="entry 2"):
        run(tmp_path, books, {}, "2026-11-03")
    with sqlite3.connect(store_path()) as db:
        assert db.execute("SELECT count(*) FROM entries").fetchone() == (3,)
    db.close()


def test_any_single_edit_of_any_entry_is_caught(tmp_path: Path) -> None:
    """Each column of each entry, and every 7th character of a run's payload, changed one at a
    time in a copy of the store: verify always fails, naming that entry or an earlier one."""
    import shutil

    books = {"c": "5.00 USD success", "d": "6.00 USD success"}
    first = run(tmp_path, books, {}, "2026-11-01")
    acknowledge("t", first.exceptions.head(1), note="known", by="ana")
    run(tmp_path, books, {}, "2026-11-02")
    pristine = tmp_path / "pristine.sqlite"
    shutil.copy(store_path(), pristine)
    with sqlite3.connect(pristine) as db:
        rows = db.execute("SELECT seq, number, payload FROM entries ORDER BY number").fetchall()
    db.close()
    edits: list[tuple[int, str, tuple[object, ...]]] = []
    for seq, number, _ in rows:
        edits += [
            (number, f"UPDATE entries SET {column} = {column} || 'x' WHERE seq = ?", (seq,))
            for column in ("track", "kind", "at", "payload", "prev_hash", "hash")
        ]
        edits.append((number, "UPDATE entries SET number = number + 10 WHERE seq = ?", (seq,)))
    last_seq, last_number, run_payload = rows[-1]
    for position in range(0, len(run_payload), 7):
        changed = run_payload[:position] + chr(ord(run_payload[position]) ^ 1) + run_payload[position + 1 :]
        edits.append((last_number, "UPDATE entries SET payload = ? WHERE seq = ?", (changed, last_seq)))
    for number, sql, parameters in edits:
        shutil.copy(pristine, store_path())
        with sqlite3.connect(store_path()) as db:
            db.execute(sql, parameters)
        db.close()
        with pytest.raises(TrackIntegrityError) as caught:
            verify_track("t")
        named = int(str(caught.value).split("entry ")[1].split(" ")[0])
        assert named <= number, (sql, str(caught.value))
    assert len(edits) > 50


# ---------------------------------------------------------------------------------------------
# Informational rows (in transit, within tolerance) are reported, never tracked


def informational_run(folder: Path, ledger: dict[str, str], day: str) -> ReconciliationResult:
    """A run of track ``t`` whose result also has the informational rows of ``with_information``."""
    led, pro = sides(folder / day, ledger, {"a": PAID})
    return track_result(with_information(reconcile(load_ledger(led), load_processor(pro))), "t", as_of=day)


def test_informational_rows_get_no_state_and_count_towards_no_threshold(tmp_path: Path) -> None:
    first = informational_run(tmp_path, {"a": PAID, "gone": "5.00 USD success"}, "2026-11-01")
    second = informational_run(tmp_path, {"a": PAID, "late": "6.00 USD success"}, "2026-11-20")
    assert second.tracking is not None and first.tracking is not None
    assert (second.exception_count, second.info_count) == (1, 5)
    # The track follows the exception only: one new, the earlier one resolved, no info row.
    assert second.tracking.state_counts() == {"new": 1, "open": 0, "acknowledged": 0, "resolved": 1}
    assert list(second.tracking.exceptions["merchantReferenceId"]) == ["late"]
    assert list(second.tracking.states()["category"]) == ["missing_in_processor"]
    assert list(second.tracking.resolved["merchantReferenceId"]) == ["gone"]  # not the info rows
    # They stay in the result, with a blank state.
    info = second.exceptions[second.exceptions["severity"] == "info"]
    assert len(info) == 5 and info["exceptionId"].isna().all() and info["state"].isna().all()
    assert info["ageDays"].isna().all() and info["age_days"].notna().sum() == 4
    # Thresholds: one exception, however many informational rows, and none of them aged.
    assert findings(second, max_exceptions=1, max_age=0) is None
    assert findings(second, max_exceptions=0) == "1 new or open exceptions, more than max-exceptions 0"
    # The audit log holds the exceptions only, in the same format, and verifies.
    history = track_history("t")
    assert list(history["exceptions"]) == [1, 1] and verify_track("t") == 3
    with sqlite3.connect(store_path(None)) as connection:
        payload = connection.execute(
            "SELECT payload FROM entries WHERE kind = 'run' ORDER BY seq DESC"
        ).fetchone()[0]
    assert "transit-" not in payload and "tol-" not in payload


def test_a_tracked_report_lists_informational_rows_without_a_state(tmp_path: Path) -> None:
    informational_run(tmp_path, {"a": PAID, "gone": "5.00 USD success"}, "2026-11-01")
    second = informational_run(tmp_path, {"a": PAID, "late": "6.00 USD success"}, "2026-11-20")
    paths = write_report(second, tmp_path / "out", environment="test")
    frame = pd.read_csv(paths["exceptions.csv"], dtype=str, keep_default_na=False).set_index(
        "merchantReferenceId"
    )
    assert frame.loc["late", "state"] == "new" and frame.loc["late", "ageDays"] == "0"
    info = frame[frame["severity"] == "info"]
    assert len(info) == 5
    assert set(info["state"]) == set(info["exceptionId"]) == set(info["ageDays"]) == {""}  # not "nan"
    states = pd.read_csv(paths["states.csv"], dtype=str)
    assert list(states["category"]) == ["missing_in_processor"]
    workbook = openpyxl.load_workbook(paths["report.xlsx"], read_only=True)
    assert workbook.sheetnames == [
        "Summary",
        "missing_in_processor",
        "resolved",
        "in_transit",
        "within_tolerance",
        "FX",
    ]
    html = paths["report.html"].read_text(encoding="utf-8")
    assert "<strong>1 new, 0 open, 0 acknowledged</strong>" in html


def test_an_acknowledgement_lapses_when_a_duplicate_gains_rows_or_a_rejected_row_its_amount(
    tmp_path: Path,
) -> None:
    """Two charges acknowledged ("refund issued") are not four, and a rejected row of 10.00
    acknowledged is not one of 50000.00: each kept its acknowledgement, and the nightly
    threshold passed."""

    def day(name: str, charges: int, amount: str) -> ReconciliationResult:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "ledger.csv").write_text(f"{HEADER}x,10.00,USD,success\n,{amount},USD,success\n")
        (folder / "processor.csv").write_text(HEADER + "x,10.00,USD,success\n" * charges)
        return reconcile(
            load_ledger(folder / "ledger.csv"),
            load_processor(folder / "processor.csv"),
            track="t",
            as_of=name,
        )

    first = day("2026-06-03", 2, "10.00")
    ids = first.exceptions.set_index("category")["exceptionId"]
    acknowledge("t", [ids["duplicate_in_processor"], ids["rejected_row"]], note="refund issued", by="ana")
    same = day("2026-06-04", 2, "10.00")
    assert set(same.exceptions["state"]) == {"acknowledged"}
    changed = day("2026-06-05", 4, "50000.00").exceptions.set_index("category")
    assert changed.loc["duplicate_in_processor", "state"] == "open"
    assert str(changed.loc["duplicate_in_processor", "stateReason"]).endswith(
        "lapsed: rows 2 rows: 10.00 USD success; 10.00 USD success -> 4 rows: "
        + "; ".join(["10.00 USD success"] * 4)
    )
    assert changed.loc["rejected_row", "state"] == "open"
    assert str(changed.loc["rejected_row", "stateReason"]).endswith(
        "lapsed: amount as written 10.00 -> 50000.00"
    )


def test_a_date_is_the_cut_off_the_engine_read_so_a_time_of_that_day_goes_back(tmp_path: Path) -> None:
    """``--as-of 2026-06-07`` reads the data to 23:59:59; the track recorded 00:00, so a later
    run at 12:00 that day was taken as going forward, cut a payment of 13:00 out, and listed it
    as resolved (nobody had fixed it), and the next day it was new again, its age lost."""
    ledger = tmp_path / "ledger.csv"
    processor = tmp_path / "processor.csv"
    ledger.write_text("merchantReferenceId,amount,currency,status,date\na,10.00,USD,success,2026-05-20\n")
    processor.write_text(
        "merchantReferenceId,amount,currency,status,createTime\n"
        "a,10.00,USD,success,2026-05-20T10:00:00Z\ne,7.00,USD,success,2026-06-07T13:00:00Z\n"
    )

    def day(as_of: str) -> ReconciliationResult:
        return reconcile(load_ledger(ledger), load_processor(processor), track="t", as_of=as_of)

    first = day("2026-06-07")
    assert states(first) == {("e", "missing_in_ledger"): ("new", 0)}
    assert cell(first, "e", "firstSeen") == "2026-06-07T23:59:59Z"
    with pytest.raises(TrackError, match="go forward in time"):
        day("2026-06-07T12:00:00Z")
    again = day("2026-06-07")  # a re-run of the day: the same states
    assert states(again) == {("e", "missing_in_ledger"): ("new", 0)}
    assert states(day("2026-06-08")) == {("e", "missing_in_ledger"): ("open", 1)}


def test_a_run_whose_period_does_not_cover_the_last_ones_is_refused(tmp_path: Path) -> None:
    """A rolling one-day period listed every exception of the day before as resolved, unchecked
    (nobody had fixed C). A period that grows (a month to date) keeps it open, with its age."""
    ledger = tmp_path / "ledger.csv"
    processor = tmp_path / "processor.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status,date\n"
        "a,10.00,USD,success,2024-06-01\nc,30.00,USD,success,2024-06-01\ng,12.00,USD,success,2024-06-02\n"
    )
    processor.write_text(
        "merchantReferenceId,amount,currency,status,createTime\n"
        "a,10.00,USD,success,2024-06-01T10:00:00Z\ng,12.00,USD,success,2024-06-02T10:00:00Z\n"
    )

    def day(track: str, as_of: str, start: str, end: str) -> ReconciliationResult:
        led = select_period(load_ledger(ledger), "date", start, end)
        pro = select_period(load_processor(processor), "createTime", start, end)
        return reconcile(led, pro, track=track, as_of=as_of)

    assert states(day("daily", "2024-06-05", "2024-06-01", "2024-06-01")) == {
        ("c", "missing_in_processor"): ("new", 0)
    }
    with pytest.raises(
        TrackError, match=r"run 1 reconciled 2024-06-01 to 2024-06-01, which this run's period"
    ):
        day("daily", "2024-06-06", "2024-06-02", "2024-06-02")
    day("month", "2024-06-05", "2024-06-01", "2024-06-01")
    grown = day("month", "2024-06-06", "2024-06-01", "2024-06-02")
    assert states(grown) == {("c", "missing_in_processor"): ("open", 1)}
    assert grown.tracking is not None and grown.tracking.resolved.empty
    assert states(day("month", "2024-06-07", "", "")) == {("c", "missing_in_processor"): ("open", 2)}


def test_an_entry_without_the_entries_before_it_refuses_every_track_a_new_one_too(tmp_path: Path) -> None:
    """Which track an orphan came from cannot be told: every track was refused but a new one,
    which recorded its first run and was refused at its second."""
    books = {"c": "5.00 USD success"}
    run(tmp_path, books, {}, "2026-11-01", track="a")
    run(tmp_path / "b", books, {}, "2026-11-01", track="b")
    with sqlite3.connect(store_path()) as db:
        db.execute("DELETE FROM entries WHERE track = 'a' AND number = 1")
    db.close()
    for track in ("b", "new"):
        with pytest.raises(TrackIntegrityError, match="entry 2 of track 'a' without the entries before it"):
            run(tmp_path / track, books, {}, "2026-11-02", track=track)
    with sqlite3.connect(store_path()) as db:
        assert db.execute("SELECT count(*) FROM entries WHERE track = 'new'").fetchone() == (0,)
    db.close()


def test_the_headline_leaves_acknowledged_exceptions_out_of_those_to_review(tmp_path: Path) -> None:
    """Two exceptions, both acknowledged, were "2 exceptions to review" on the page."""
    from toolkit.reconcile.render.figures import verdict

    books = {"c": "5.00 USD success", "d": "6.00 USD success"}
    first = run(tmp_path, books, {}, "2026-11-01")
    assert verdict(first) == "2 exceptions to review; 0 payments matched."
    acknowledge("t", [ident(first, "c")], note="known", by="ana")
    assert verdict(run(tmp_path, books, {}, "2026-11-02")) == (
        "1 exception to review and 1 acknowledged; 0 payments matched."
    )
    acknowledge("t", [ident(first, "d")], note="known", by="ana")
    third = run(tmp_path, books, {}, "2026-11-03")
    assert verdict(third) == "Nothing to review: 2 acknowledged; 0 payments matched."
    page = (write_report(third, tmp_path / "page", environment="tests")["report.html"]).read_text()
    assert "Nothing to review: 2 acknowledged" in page


def test_acknowledging_again_is_refused_naming_who_did_and_the_sign_offs_are_listed(
    tmp_path: Path,
) -> None:
    """A second acknowledgement replaced the first one's person and note in the state, unseen."""
    books = {"c": "5.00 USD success", "d": "6.00 USD success"}
    first = run(tmp_path, books, {}, "2026-11-01")
    c, d = ident(first, "c"), ident(first, "d")
    acknowledge("t", [c], note="invoice sent late", by="ana")
    with pytest.raises(TrackError, match=f"{c} is already acknowledged by ana at .*: reopen it first"):
        acknowledge("t", [d, c], note="all fine", by="bo")  # all or nothing: d is not signed either
    second = run(tmp_path, books, {}, "2026-11-02")
    assert states(second)[("d", "missing_in_processor")] == ("open", 1)
    assert cell(second, "c", "stateReason").startswith("acknowledged by ana")
    with pytest.raises(TrackError, match="already acknowledged by ana"):  # held across the run too
        acknowledge("t", [c], note="all fine", by="bo")

    reopen("t", [c], note="customer disputes it", by="cy")
    with pytest.raises(TrackError, match="is not acknowledged: nothing to reopen"):
        reopen("t", [c], note="again", by="cy")  # a reopening after the run decides, as an ack does
    acknowledge("t", [c], note="credit note issued", by="bo")
    third = run(tmp_path, books, {}, "2026-11-03")
    assert cell(third, "c", "stateReason").startswith("acknowledged by bo")

    signed = track_signoffs("t")
    assert list(signed.columns) == [
        "at",
        "action",
        "exceptionId",
        "category",
        "merchantReferenceId",
        "by",
        "osUser",
        "note",
        "run",
    ]
    assert signed[["action", "exceptionId", "merchantReferenceId", "by", "note", "run"]].values.tolist() == [
        ["acknowledged", c, "c", "ana", "invoice sent late", 1],
        ["reopened", c, "c", "cy", "customer disputes it", 2],
        ["acknowledged", c, "c", "bo", "credit note issued", 2],
    ]
    assert set(signed["category"]) == {"missing_in_processor"}
    assert signed["at"].is_monotonic_increasing


def test_a_lapsed_acknowledgement_stays_lapsed_when_the_day_is_run_again_with_the_old_facts(
    tmp_path: Path,
) -> None:
    """Re-running a day compares with the run before that day: an acknowledgement that lapsed in
    the first re-run (the facts changed) came back in the next one, signed by nobody."""
    ledger = {"a": PAID}
    failed, pending = {"a": "10.00 USD failure"}, {"a": "10.00 USD pending"}
    run(tmp_path, ledger, failed, "2026-11-01")
    (eid,) = run(tmp_path, ledger, failed, "2026-11-02").exceptions["exceptionId"]
    acknowledge("t", [eid], note="card declined, customer re-paid", by="bo")
    assert cell(run(tmp_path, ledger, failed, "2026-11-02"), "a", "state") == "acknowledged"  # a re-run
    lapsed = run(tmp_path, ledger, pending, "2026-11-02")
    assert cell(lapsed, "a", "state") == "open"
    assert cell(lapsed, "a", "stateReason").endswith("lapsed: processor_status failure -> pending")
    again = run(tmp_path, ledger, failed, "2026-11-02")
    assert cell(again, "a", "state") == "open"
    assert cell(again, "a", "stateReason").startswith("acknowledgement by bo at ")
    assert "lapsed in run 4" in cell(again, "a", "stateReason")
    assert cell(run(tmp_path, ledger, failed, "2026-11-03"), "a", "state") == "open"  # for good
