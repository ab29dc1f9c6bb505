"""Tracked runs that hid money or trusted a forgeable log (issue 34), each failing before its fix."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import string
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.cli import main
from toolkit.errors import TrackError
from toolkit.notebooks import secrets_in_environment
from toolkit.reconcile import audit
from toolkit.reconcile.tracking.signing import acknowledge
from toolkit.reconcile.tracking.store import (
    _GENESIS,
    check_track_name,
    entry_hash,
    os_user,
    store_path,
)

HEADER = "merchantReferenceId,amount,currency,status\n"


def night(tmp_path: Path, day: str, processor_rows: list[str], *extra: str, track: str = "t") -> int:
    """A tracked run of ``day``: the ledger books x once at 100.00, the processor has ``rows``."""
    folder = tmp_path / day
    folder.mkdir(exist_ok=True)
    (folder / "ledger.csv").write_text(HEADER + "x,100.00,USD,success\n", encoding="utf-8")
    (folder / "processor.csv").write_text(
        HEADER + "".join(r + "\n" for r in processor_rows), encoding="utf-8"
    )
    return main(
        [
            "reconcile",
            "--ledger",
            str(folder / "ledger.csv"),
            "--processor",
            str(folder / "processor.csv"),
            "--track",
            track,
            "--as-of",
            day,
            "--output-dir",
            str(folder / "out"),
            *extra,
        ]
    )


THRICE = ["x,100.00,USD,success"] * 3


def exceptions(tmp_path: Path, day: str) -> list[dict[str, str]]:
    import csv

    with (tmp_path / day / "out" / "exceptions.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def ack_all(tmp_path: Path, day: str, *extra: str, track: str = "t") -> int:
    ids = [row["exceptionId"] for row in exceptions(tmp_path, day)]
    return main(["reconcile", "ack", "--track", track, *ids, "--note", "refund issued", *extra])


def test_an_acknowledged_duplicate_whose_third_charge_grows_is_open_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Charged three times at 100.00, acknowledged; the next night the third is 99,999.00: the
    acknowledgement covered the rows a person saw, not only the row shown and the count."""
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    assert ack_all(tmp_path, "2026-06-01", "--by", "ana") == 0
    assert night(tmp_path, "2026-06-02", THRICE, "--max-exceptions", "0") == 0  # still acknowledged
    capsys.readouterr()
    grown = ["x,100.00,USD,success", "x,100.00,USD,success", "x,99999.00,USD,success"]
    assert night(tmp_path, "2026-06-03", grown, "--max-exceptions", "0") == 1
    assert "1 new or open exceptions" in capsys.readouterr().err
    (row,) = exceptions(tmp_path, "2026-06-03")
    assert row["state"] == "open"
    assert "lapsed" in row["stateReason"] and "99999.00 USD success" in row["stateReason"]


def test_an_acknowledgement_recorded_before_the_facts_were_widened_lapses_once_saying_so(
    tmp_path: Path,
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    (row,) = exceptions(tmp_path, "2026-06-01")
    # An acknowledgement as the toolkit recorded it before: of the count of rows only ("3").
    path = store_path()
    with sqlite3.connect(path) as connection:
        (last_hash,) = connection.execute("SELECT hash FROM entries ORDER BY number DESC LIMIT 1").fetchone()
        facts = ["", "100.00", "", "USD", "", "success", "3", ""]
        payload = json.dumps(
            {
                "by": "ana",
                "facts": {row["exceptionId"]: facts},
                "ids": [row["exceptionId"]],
                "note": "ok",
                "run": 1,
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        at = "2026-06-01T12:00:00Z"
        digest = entry_hash(3, "t", "ack", at, last_hash, payload)
        connection.execute(
            "INSERT INTO entries (track, number, kind, at, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
            ("t", 3, "ack", at, payload, last_hash, digest),
        )
    audit.save_head(path, audit.Head("t", 3, digest))
    assert night(tmp_path, "2026-06-02", THRICE) == 0
    (again,) = exceptions(tmp_path, "2026-06-02")
    assert again["state"] == "open"
    assert "covered a duplicate's number of rows only" in again["stateReason"]
    assert "3 rows: 100.00 USD success; 100.00 USD success; 100.00 USD success" in again["stateReason"]


def _forge_note(path: Path) -> None:
    """Rewrite an acknowledgement's author and note and recompute every hash after it, as someone
    who can write the store would."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT number, track, kind, at, payload FROM entries WHERE track = 't' ORDER BY number"
        ).fetchall()
        previous = _GENESIS
        for number, track, kind, at, payload in rows:
            data = json.loads(payload)
            if kind == "ack":
                data["by"], data["note"] = "the controller", "approved"
            text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest = entry_hash(number, track, kind, at, previous, text)
            connection.execute(
                "UPDATE entries SET payload = ?, prev_hash = ?, hash = ? WHERE track = ? AND number = ?",
                (text, previous, digest, track, number),
            )
            previous = digest


def test_a_recomputed_chain_fails_verify_against_the_head_kept_outside_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    assert ack_all(tmp_path, "2026-06-01", "--by", "ana") == 0
    assert night(tmp_path, "2026-06-02", THRICE) == 0
    report = tmp_path / "2026-06-02" / "out" / "report.html"
    saved = tmp_path / "saved-report.html"
    saved.write_bytes(report.read_bytes())
    run_json = json.loads((tmp_path / "2026-06-02" / "out" / "run.json").read_text(encoding="utf-8"))
    assert run_json["auditHead"].startswith("t#4:")
    assert run_json["auditHead"] in report.read_text(encoding="utf-8")
    assert main(["reconcile", "verify", "--track", "t", "--against", str(saved)]) == 0
    capsys.readouterr()

    _forge_note(store_path())
    assert main(["reconcile", "verify", "--track", "t"]) == 2
    assert "rewritten outside the toolkit" in capsys.readouterr().err
    # The head beside the store removed too: the report kept elsewhere still tells.
    (store_path().parent / "heads" / "t").unlink()
    assert main(["reconcile", "verify", "--track", "t", "--against", str(saved)]) == 2
    assert "saved-report.html" in capsys.readouterr().err


def test_a_keyed_chain_cannot_be_recomputed_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = tmp_path / "audit.key"
    key_file.write_text("a-long-audit-key-kept-apart\n", encoding="utf-8")
    monkeypatch.setenv("TOOLKIT_AUDIT_KEY_FILE", str(key_file))
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    assert ack_all(tmp_path, "2026-06-01", "--by", "ana") == 0
    with sqlite3.connect(store_path()) as connection:
        hashes = [h for (h,) in connection.execute("SELECT hash FROM entries")]
    assert hashes and all(h.startswith("hmac-sha256:") for h in hashes)
    assert main(["reconcile", "verify", "--track", "t"]) == 0
    capsys.readouterr()

    _forge_note(store_path())  # recomputed as plain SHA-256: the forger has no key
    (store_path().parent / "heads" / "t").unlink()
    assert main(["reconcile", "verify", "--track", "t"]) == 2
    err = capsys.readouterr().err
    assert "no entry of the track is keyed" in err
    # Without the key, a keyed track is neither run nor verified.
    monkeypatch.delenv("TOOLKIT_AUDIT_KEY_FILE")
    assert "a-long-audit-key-kept-apart" in secrets_in_environment({"TOOLKIT_AUDIT_KEY_FILE": str(key_file)})


def test_a_keyed_track_is_refused_without_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLKIT_AUDIT_KEY", "another-long-audit-key")
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    monkeypatch.delenv("TOOLKIT_AUDIT_KEY")
    capsys.readouterr()
    assert main(["reconcile", "verify", "--track", "t"]) == 2
    assert "is keyed" in capsys.readouterr().err
    assert night(tmp_path, "2026-06-02", THRICE) == 2


@pytest.mark.parametrize("what", ["entries", "file"])
def test_a_track_whose_history_is_gone_is_an_error_not_run_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    if what == "entries":
        with sqlite3.connect(store_path()) as connection:
            connection.execute("DELETE FROM entries WHERE track = 't'")
    else:
        store_path().unlink()
    capsys.readouterr()
    if what == "file":  # verify says the store was deleted, not "no track has been run yet"
        assert main(["reconcile", "verify", "--track", "t"]) == 2
        assert "the store was deleted" in capsys.readouterr().err
    assert night(tmp_path, "2026-06-02", THRICE) == 2
    assert "is gone from the store" in capsys.readouterr().err


def test_a_history_gone_with_its_saved_head_is_still_seen_in_the_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reused --output-dir's run.json records run 1 of the track: not a fresh start."""
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    out = tmp_path / "2026-06-01" / "out"
    store_path().unlink()
    (store_path().parent / "heads" / "t").unlink()
    capsys.readouterr()
    code = main(
        [
            "reconcile",
            "--ledger",
            str(tmp_path / "2026-06-01" / "ledger.csv"),
            "--processor",
            str(tmp_path / "2026-06-01" / "processor.csv"),
            "--track",
            "t",
            "--as-of",
            "2026-06-02",
            "--output-dir",
            str(out),
        ]
    )
    assert code == 2
    assert "records run 1 of it" in capsys.readouterr().err


def test_the_operating_system_user_is_recorded_beside_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    monkeypatch.setenv("USER", "the-controller")
    monkeypatch.setenv("LOGNAME", "the-controller")
    assert ack_all(tmp_path, "2026-06-01") == 0  # no --by: the account, not what USER says
    capsys.readouterr()
    assert main(["reconcile", "signoffs", "--track", "t"]) == 0
    printed = capsys.readouterr().out
    assert "the-controller" not in printed and os_user() in printed
    assert os_user() != "the-controller"


def test_a_track_name_with_a_trailing_newline_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE, track="t1\n") == 2
    assert "track name" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["%", "E%", "E0123456789abcdeX", "e0123456789abcdef"])
def test_an_ack_id_not_of_the_ids_form_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE, track="a") == 0
    assert night(tmp_path, "2026-06-01", THRICE, track="b") == 0
    capsys.readouterr()
    assert main(["reconcile", "ack", "--track", "a", given, "--note", "n", "--by", "ana"]) == 2
    err = capsys.readouterr().err
    assert "is not an exception id" in err and "track b" not in err


@pytest.fixture
def immutable() -> Iterator[Callable[[Path], None]]:
    """Make a file immutable (``chattr +i``): not even root may open it for writing, so SQLite
    opens the store read-only, as for a read-only mount. Undone after the test."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if shutil.which("chattr") is None:
            pytest.skip("no chattr here to make a file read-only for root")
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"chattr +i refused here: {done.stderr.decode(errors='replace').strip()}")
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def test_a_store_that_cannot_be_written_is_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], immutable: Callable[[Path], None]
) -> None:
    """A read-only tracks.sqlite was a sqlite3.OperationalError traceback and exit 1."""
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    (row,) = exceptions(tmp_path, "2026-06-01")
    immutable(store_path())
    capsys.readouterr()
    assert night(tmp_path, "2026-06-02", THRICE) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "nothing was recorded" in err
    assert main(["reconcile", "ack", "--track", "t", row["exceptionId"], "--note", "n", "--by", "a"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nothing was recorded" in err


def test_a_future_as_of_typed_by_mistake_is_voided_and_the_track_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert night(tmp_path, "2026-06-01", THRICE) == 0
    assert night(tmp_path, "2099-06-01", THRICE) == 0  # meant 2026-06-02: the track was locked
    capsys.readouterr()
    assert night(tmp_path, "2026-06-02", THRICE) == 2
    assert "go forward in time" in capsys.readouterr().err
    assert main(["reconcile", "void", "--track", "t", "--run", "1", "--note", "typo", "--by", "ana"]) == 2
    assert "not its latest run" in capsys.readouterr().err
    assert (
        main(["reconcile", "void", "--track", "t", "--run", "2", "--note", "typo in --as-of", "--by", "ana"])
        == 0
    )
    said = capsys.readouterr().out
    assert "run 2 voided" in said and "compared with run 1 (as of 2026-06-01T23:59:59Z)" in said
    assert night(tmp_path, "2026-06-02", THRICE) == 0
    assert "track t run 3" in capsys.readouterr().out  # the voided run keeps its number
    (row,) = exceptions(tmp_path, "2026-06-02")
    assert row["state"] == "open" and row["firstSeen"] == "2026-06-01T23:59:59Z"  # compared with run 1
    assert main(["reconcile", "signoffs", "--track", "t"]) == 0
    assert "voided run" in capsys.readouterr().out
    assert main(["reconcile", "verify", "--track", "t"]) == 0


def test_a_past_as_of_that_compares_nothing_says_so_and_fails_a_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status,date\nm1,10.00,USD,success,2026-06-01\n", encoding="utf-8"
    )
    processor = tmp_path / "processor.csv"
    processor.write_text(
        "merchantReferenceId,amount,currency,status,createTime\nm1,10.00,USD,success,2026-06-01T10:00:00Z\n",
        encoding="utf-8",
    )
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--as-of", "2020-01-01"]
    assert main([*args, "--output-dir", str(tmp_path / "a")]) == 0
    captured = capsys.readouterr()
    assert "warning: nothing was compared" in captured.err and "2 after the cut-off" in captured.err
    assert main([*args, "--output-dir", str(tmp_path / "b"), "--max-exceptions", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: nothing was compared") and err.count("\n") == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_any_track_name_is_taken_whole_or_refused(name: str) -> None:
    """Property: a name is accepted only when the whole of it is of the allowed form; never a
    look-alike with a trailing newline or another character the rule does not name."""
    allowed = set(string.ascii_letters + string.digits + "._-")
    whole = 1 <= len(name) <= 100 and name[0] not in "._-" and set(name) <= allowed
    try:
        check_track_name(name)
    except TrackError:
        assert not whole
    else:
        assert whole


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.from_regex(r"E[0-9a-f]{16}", fullmatch=True)))
def test_any_ack_id_not_of_the_ids_form_is_refused_before_the_store(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    """Property: ``ack`` refuses every id not of the form ``E`` + 16 hex digits without reading a
    store (there is none here); one of the form gets as far as the store."""
    home = tmp_path_factory.mktemp("home")
    form = bool(re.fullmatch(r"E[0-9a-f]{16}", text.strip())) and text.strip() != ""
    with pytest.raises(TrackError) as refused:
        acknowledge("t", [text], note="n", by="ana", home=home)
    said = str(refused.value)
    assert ("no reconciliation store" in said) == form
    assert ("is not an exception id" in said or "no exception id given" in said) == (not form)
