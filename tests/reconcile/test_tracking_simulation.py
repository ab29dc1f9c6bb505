"""Thirty nights of a tracked reconciliation on a sandbox whose clock moves a day at a time.

Each day the books record that day's payments and the sandbox takes them, except for what is
planted: payments that reach the processor a day or two after they were booked, a mistyped amount
corrected a few days later, a booking never charged (acknowledged, and it stays so), a mismatch
acknowledged whose booking then changes (the acknowledgement lapses), a charge never booked (it
ages past ``--max-age``). A small model of the expected books and charges says, independently of
the tracker, which exceptions each night must report, in which state and how old, which are
resolved, and what the exit code must be. One night is run twice: nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.client import Client
from toolkit.controls import SandboxControls
from toolkit.sandbox.embedded import RunningSandbox, start_server

DAYS = 30
MAX_EXCEPTIONS, MAX_AGE = 3, 14
TRACK = "sim"


@pytest.fixture
def own_sandbox(tmp_path: Path) -> Iterator[RunningSandbox]:
    """A sandbox of this test alone: its clock is moved 30 days."""
    server = start_server(db_path=tmp_path / "sandbox.sqlite")
    yield server
    server.stop()


def plan() -> tuple[dict[int, dict[str, str]], dict[int, dict[str, str]]]:
    """What is booked on each day (key -> amount, a later booking replacing an earlier one) and
    what is charged on each day (key -> amount)."""
    booked: dict[int, dict[str, str]] = {d: {} for d in range(DAYS)}
    charged: dict[int, dict[str, str]] = {d: {} for d in range(DAYS)}
    for d in range(DAYS):
        for part in ("A", "B"):  # booked and charged the same day: matched
            key = f"D{d:02d}-{part}"
            booked[d][key] = charged[d][key] = f"{10 + d}.{25 if part == 'A' else 50}"
        if d % 3 == 0 and d + 2 < DAYS:  # charged one or two days after it was booked
            key = f"LATE{d:02d}"
            booked[d][key] = f"{20 + d}.00"
            charged[d + 1 + (d // 3) % 2][key] = f"{20 + d}.00"
    booked[5]["W05"], charged[5]["W05"] = "99.00", "9.90"  # a mistyped amount ...
    booked[9]["W05"] = "9.90"  # ... corrected four days later
    booked[2]["K02"] = "15.00"  # never charged: acknowledged on day 3, and it stays so
    booked[10]["M10"], charged[10]["M10"] = "50.00", "55.00"  # acknowledged on day 11 ...
    booked[15]["M10"] = "52.00"  # ... rebooked wrongly on day 15: the acknowledgement lapses
    booked[20]["M10"] = "55.00"  # ... and booked right on day 20: resolved
    charged[12]["N12"] = "30.00"  # never booked: open, and older than MAX_AGE from day 27
    return booked, charged


ACKNOWLEDGE = {3: "K02", 11: "M10"}


def expected_exceptions(
    day: int, booked: dict[int, dict[str, str]], charged: dict[int, dict[str, str]]
) -> dict[str, tuple[str, tuple[str, str]]]:
    """key -> (category, (ledger amount, processor amount)) on ``day``: the model of the books."""
    ledger: dict[str, str] = {}
    processor: dict[str, str] = {}
    for d in range(day + 1):
        ledger.update(booked[d])
        processor.update(charged[d])
    out = {}
    for key in sorted(set(ledger) | set(processor)):
        led, pro = ledger.get(key), processor.get(key)
        if pro is None:
            out[key] = ("missing_in_processor", (led or "", ""))
        elif led is None:
            out[key] = ("missing_in_ledger", ("", pro))
        elif float(led) != float(pro):  # only two-decimal test amounts here
            out[key] = ("amount_mismatch", (led, pro))
    return out


def ledger_csv(day: int, booked: dict[int, dict[str, str]], path: Path) -> None:
    ledger: dict[str, str] = {}
    for d in range(day + 1):
        ledger.update(booked[d])
    path.write_text(
        "merchantReferenceId,amount,currency,status\n"
        + "".join(f"{k},{a},USD,success\n" for k, a in sorted(ledger.items())),
        encoding="utf-8",
    )


@pytest.mark.slow
def test_thirty_days(  # noqa: PLR0915 (thirty nights read best as one story)
    own_sandbox: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    booked, charged = plan()
    previous: dict[str, tuple[str, tuple[str, str]]] = {}
    first_seen: dict[str, int] = {}
    acknowledged: dict[str, tuple[str, str]] = {}  # key -> the facts acknowledged
    with Client(base_url=own_sandbox.base_url, api_key=own_sandbox.api_key) as client:
        controls = SandboxControls(client)
        start = controls.now()
        for day in range(DAYS):
            if day:
                controls.advance_clock(days=1)
            for key, amount in charged[day].items():
                client.create_payment(
                    paymentMethodType="CARD",
                    paymentInstrumentId="pi_test_success",
                    returnUrl="https://shop.example/r",
                    customerEmail="sim@example.com",
                    amount=amount,
                    currency="USD",
                    merchantReferenceId=key,
                )
            folder = tmp_path / f"day{day:02d}"
            folder.mkdir()
            ledger_csv(day, booked, folder / "ledger.csv")
            (folder / "processor.csv").write_bytes(controls.export_csv())
            now = controls.now()
            assert (now - start).days == day
            as_of = now.strftime("%Y-%m-%dT%H:%M:%SZ")
            args = [
                "reconcile",
                "--ledger",
                str(folder / "ledger.csv"),
                "--processor",
                str(folder / "processor.csv"),
                "--output-dir",
                str(folder / "report"),
                "--track",
                TRACK,
                "--as-of",
                as_of,
                "--max-exceptions",
                str(MAX_EXCEPTIONS),
                "--max-age",
                str(MAX_AGE),
            ]
            code = main(args)
            capsys.readouterr()

            # The model: what must be reported tonight.
            current = expected_exceptions(day, booked, charged)
            for key in current:
                if key not in previous:
                    first_seen[key] = day
                    acknowledged.pop(key, None)  # a new streak: an old sign-off does not hold
            states = {}
            for key, (_, facts) in current.items():
                if key in acknowledged and acknowledged[key] == (facts[0], facts[1]):
                    states[key] = "acknowledged"
                else:
                    acknowledged.pop(key, None)  # lapsed for good
                    states[key] = "open" if key in previous else "new"
            resolved = sorted(set(previous) - set(current))
            unacknowledged = [k for k in current if states[k] != "acknowledged"]
            too_many = len(unacknowledged) > MAX_EXCEPTIONS
            too_old = any(day - first_seen[k] > MAX_AGE for k in unacknowledged)

            report = pd.read_csv(folder / "report" / "exceptions.csv", dtype=str, keep_default_na=False)
            got = {
                r.merchantReferenceId: (
                    r.category,
                    r.state,
                    int(str(r.ageDays)),
                    (r.ledger_amount, r.processor_amount),
                )
                for r in report.itertuples()
            }
            want = {
                key: (category, states[key], day - first_seen[key], facts)
                for key, (category, facts) in current.items()
            }
            assert got == want, f"day {day}"
            gone = pd.read_csv(folder / "report" / "resolved.csv", dtype=str, keep_default_na=False)
            assert sorted(gone["merchantReferenceId"]) == resolved, f"day {day}"
            assert code == (1 if too_many or too_old else 0), f"day {day}: {too_many=} {too_old=}"

            if day == 16:  # the same night again: nothing changes
                again = [*args[:6], str(folder / "again"), *args[7:]]
                assert main(again) == code
                capsys.readouterr()
                for name in ("exceptions.csv", "resolved.csv", "states.csv", "ages.csv", "summary.csv"):
                    assert (folder / "again" / name).read_bytes() == (
                        folder / "report" / name
                    ).read_bytes(), name

            if day in ACKNOWLEDGE:
                key = ACKNOWLEDGE[day]
                (exception_id,) = report.loc[report["merchantReferenceId"] == key, "exceptionId"]
                assert (
                    main(
                        [
                            "reconcile",
                            "ack",
                            "--track",
                            TRACK,
                            exception_id,
                            "--note",
                            "explained",
                            "--by",
                            "ana",
                        ]
                    )
                    == 0
                )
                capsys.readouterr()
                acknowledged[key] = current[key][1]
            previous = current

    # What the nights looked like, as the model says: every planted story happened.
    assert main(["reconcile", "verify", "--track", TRACK]) == 0
    assert main(["reconcile", "history", "--track", TRACK]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"ok: track {TRACK}: {DAYS + 1} run(s)"  # 30 nights and the re-run
    final = pd.read_csv(tmp_path / "day29" / "report" / "exceptions.csv", dtype=str).set_index(
        "merchantReferenceId"
    )
    assert final.loc["K02", "state"] == "acknowledged" and final.loc["K02", "ageDays"] == "27"
    assert final.loc["N12", "state"] == "open" and final.loc["N12", "ageDays"] == "17"
    lapsed = pd.read_csv(tmp_path / "day15" / "report" / "exceptions.csv", dtype=str).set_index(
        "merchantReferenceId"
    )
    assert lapsed.loc["M10", "state"] == "open" and "ledger_amount 50.00 -> 52.00" in str(
        lapsed.loc["M10", "stateReason"]
    )
