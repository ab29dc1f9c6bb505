"""Dates as ledgers and exports write them (issue 37): month names, a side's own date format, the
order of slashed dates decided from the file, a side's time zone; on both backends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import load_ledger, load_processor, reconcile, select_period
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import with_epoch_seconds
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.result import ReconciliationResult

pytestmark = [
    pytest.mark.timeout(600),
    # py4j leaves its gateway's sockets to the garbage collector.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def _seconds(iso: str | None) -> int | None:
    return None if iso is None else int(dt.datetime.fromisoformat(iso).replace(tzinfo=dt.UTC).timestamp())


def _read(backend: Backend, values: list[str], **options: str) -> list[int | None]:
    table = backend.register(pa.table({"when": values}))
    rows = Relation(f"SELECT * FROM {table}", ("when",), (table,))
    return [r["s"] for r in backend.arrow(with_epoch_seconds(rows, "when", "s", **options)).to_pylist()]


#: The forms read with no option (each was rejected before), and what each is read as.
BUILT_IN = {
    "01 May 2025": "2025-05-01T00:00:00",
    "1 May 2025": "2025-05-01T00:00:00",
    "01 May 2025 14:30": "2025-05-01T14:30:00",
    "1 September 2025": "2025-09-01T00:00:00",
    "1 SEPT 2025": "2025-09-01T00:00:00",
    "3 dec 2025 09:05:07": "2025-12-03T09:05:07",
    "May 1, 2025": "2025-05-01T00:00:00",
    "february 28, 2025 23:59": "2025-02-28T23:59:00",
    # Minutes then a zone: Spark rejected what DuckDB read.
    "2025-05-04 10:00 Europe/Paris": "2025-05-04T08:00:00",
    "2025-05-04T10:00+02:00": "2025-05-04T08:00:00",
    "2025-05-04T10:00Z": "2025-05-04T10:00:00",
    "1 Mai 2025": None,  # English month names only
    "May 1 2025": None,
    "31 February 2025": None,
}


def test_month_names_are_read_alike_on_both_backends(backend: Backend) -> None:
    expected = [_seconds(v) for v in BUILT_IN.values()]
    assert _read(backend, list(BUILT_IN)) == expected, backend.name


#: Formats, a value written in each, and what it is read as.
FORMATS = [
    ("%d-%b-%y %I:%M %p", "05-May-25 02:30 PM", "2025-05-05T14:30:00"),
    ("%d-%b-%y %I:%M %p", "05-May-25 12:10 am", "2025-05-05T00:10:00"),
    ("%m/%d/%Y", "12/31/2025", "2025-12-31T00:00:00"),
    ("%m/%d/%Y", "1/2/2025 7:05", "2025-01-02T07:05:00"),  # a date's format reads a time after it
    ("%Y%m%d", "20250501", "2025-05-01T00:00:00"),
    ("%d.%m.%Y %H:%M:%S", "02.01.2025 23:00:01", "2025-01-02T23:00:01"),
    ("%B %d %Y", "June 3 2025", "2025-06-03T00:00:00"),
    ("%m/%d/%Y", "2025-05-04", "2025-05-04T00:00:00"),  # the forms read with no option still are
    ("%m/%d/%Y", "31/12/2025", None),
]


def test_a_date_format_is_read_alike_on_both_backends(backend: Backend) -> None:
    for written, value, expected in FORMATS:
        assert _read(backend, [value], written=written) == [_seconds(expected)], (written, value)


def _ledger(tmp_path: Path, dates: list[str], name: str = "books.csv") -> Path:
    rows = [f'm{i},1.00,USD,"{d}"' for i, d in enumerate(dates)]
    path = tmp_path / name
    path.write_text("merchantReferenceId,amount,currency,date\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _processor(count: int) -> pd.DataFrame:
    keys = [f"m{i}" for i in range(count)]
    return pd.DataFrame(
        {
            "merchantReferenceId": keys,
            "amount": ["1.00"] * count,
            "currency": "USD",
            "status": "success",
            "createTime": "2025-05-01",
        }
    )


def _counts(result: ReconciliationResult) -> dict[str, tuple[int, int, int]]:
    return {c.side: (c.outside, c.rejected, c.after_cutoff) for c in result.counts}


def test_each_form_places_its_row_in_the_period(tmp_path: Path, backend: Backend) -> None:
    dates = ["01 May 2025", "1 May 2025 14:30", "May 31, 2025", "1 September 2025", "30 Apr 2025"]
    ledger = select_period(load_ledger(_ledger(tmp_path, dates)), "date", "2025-05-01", "2025-05-31")
    result = reconcile(ledger, load_processor(_processor(len(dates))), backend=backend)
    assert _counts(result)["ledger"] == (2, 0, 0)
    assert result.counts[0].matched == 3


@pytest.mark.parametrize(
    ("dates", "inside"),
    [
        (["05/01/2025", "13/05/2025", "31/05/2025 21:30", "05/06/2025"], 2),  # day first
        (["05/01/2025", "05/13/2025", "05/31/2025 21:30", "06/05/2025"], 3),  # month first
    ],
)
def test_the_order_of_slashed_dates_is_decided_from_the_file(
    tmp_path: Path, backend: Backend, dates: list[str], inside: int
) -> None:
    """``05/01/2025`` is in May in a file that also writes ``13/05/2025``, in January in one
    that writes ``05/13/2025``: each file's rows were all rejected."""
    ledger = select_period(load_ledger(_ledger(tmp_path, dates)), "date", "2025-05-01", "2025-05-31")
    result = reconcile(ledger, load_processor(_processor(len(dates))), backend=backend)
    assert _counts(result)["ledger"] == (len(dates) - inside, 0, 0)
    first = "m0" in set(result.matched["merchantReferenceId"])
    assert first == dates[1].startswith("05/13")  # 5 January is outside May, May 1st inside


def test_the_frame_reads_the_order_the_file_decides(tmp_path: Path) -> None:
    ledger = load_ledger(_ledger(tmp_path, ["05/01/2025", "25/01/2025"]))
    january = select_period(ledger, "date", "2025-01-01", "2025-01-31")
    assert january.frame["merchantReferenceId"].tolist() == ["m0", "m1"]
    assert january.rejected.empty


def test_both_orders_in_one_file_are_refused_naming_the_file_and_two_dates(tmp_path: Path) -> None:
    path = _ledger(tmp_path, ["01/02/2025", "13/05/2025", "05/14/2025"])
    ledger = select_period(load_ledger(path), "date", "2025-01-01", "2025-12-31")
    with pytest.raises(InputError) as caught:
        reconcile(ledger, load_processor(_processor(3)))
    message = str(caught.value)
    assert message.startswith(f"{path}: its dates are written day first (13/05/2025) and month first")
    assert "(05/14/2025)" in message and "--ledger-date-format" in message and "\n" not in message


def test_an_undecided_order_is_refused_reading_the_first_date_both_ways(tmp_path: Path) -> None:
    """A month to date from the 1st to the 12th has no day past the 12th to say the order."""
    path = _ledger(tmp_path, ["2025-05-02", "05/01/2025", "03/04/2025"])
    ledger = select_period(load_ledger(path), "date", "2025-01-01", "2025-12-31")
    with pytest.raises(InputError) as caught:
        reconcile(ledger, load_processor(_processor(3)))
    message = str(caught.value)
    assert message.startswith(f"{path}: the order of its slashed dates is undecided: ")
    assert "05/01/2025 is 5 January or May 1st" in message
    assert "--ledger-date-format '%d/%m/%Y' or '%m/%d/%Y'" in message
    assert "ledger_date_format in the notebook, date_format= in Python" in message
    given = select_period(load_ledger(path, date_format="%m/%d/%Y"), "date", "2025-05-01", "2025-05-31")
    assert given.frame["merchantReferenceId"].tolist() == ["m0", "m1"]


def _daily(tmp_path: Path, dates: list[str], as_of: str, *, track: str | None) -> ReconciliationResult:
    ledger = load_ledger(_ledger(tmp_path, dates, f"{as_of}.csv"))
    return reconcile(ledger, load_processor(_processor(len(dates))), as_of=as_of, track=track)


def test_a_track_reads_an_undecided_file_as_its_earlier_run_did(tmp_path: Path) -> None:
    """June's first file (01/06 to 12/06) cannot say its order; the track's run of May 13th, whose
    file wrote 13/05/2025, read the side day first, and so is this file read (month first, its
    12/06/2025 would be December 6th, after the cut-off)."""
    first = _daily(tmp_path, ["13/05/2025", "01/05/2025", "02/05/2025"], "2025-05-13", track="books")
    assert first.date_formats[0] == "%d/%m/%Y"
    june = ["01/06/2025", "02/06/2025", "12/06/2025"]
    with pytest.raises(InputError, match="undecided"):  # untracked, nothing decides
        _daily(tmp_path, june, "2025-06-12", track=None)
    with pytest.raises(InputError, match="undecided"):  # another track has no earlier run
        _daily(tmp_path, june, "2025-06-12", track="other")
    read = _daily(tmp_path, june, "2025-06-12", track="books")
    assert read.date_formats[0] == "%d/%m/%Y"
    assert _counts(read)["ledger"] == (0, 0, 0) and read.exception_count == 0
    # The rows decide before the track: a file that writes 06/13/2025 is read month first.
    us = _daily(tmp_path, ["06/01/2025", "06/13/2025", "06/02/2025"], "2025-06-13", track="books")
    assert us.date_formats[0] == "%m/%d/%Y" and _counts(us)["ledger"] == (0, 0, 0)


def test_a_tracked_command_reads_an_undecided_file_as_its_earlier_run_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decided = _ledger(tmp_path, ["13/05/2025", "01/05/2025", "02/05/2025"], "first.csv")
    undecided = _ledger(tmp_path, ["01/05/2025", "02/05/2025", "03/05/2025"], "second.csv")
    assert _cli(tmp_path, undecided, "--track", "books", "--as-of", "2025-05-13") == 2
    assert "undecided" in capsys.readouterr().err
    assert _cli(tmp_path, decided, "--track", "books", "--as-of", "2025-05-13") == 0
    capsys.readouterr()
    assert _cli(tmp_path, undecided, "--track", "books", "--as-of", "2025-05-14") == 0
    assert "0 exceptions" in capsys.readouterr().out


def test_a_time_zone_moves_a_time_into_the_day_before_in_utc(tmp_path: Path, backend: Backend) -> None:
    """01:30 in Berlin on 1 June is 23:30 UTC on 31 May: before a cut-off at the end of 31 May.
    A date without a time stays that day."""
    path = _ledger(tmp_path, ["2025-06-01 01:30", "2025-06-01", "1 June 2025 01:59"])
    for zone, after in ((None, 3), ("Europe/Berlin", 1), ("+02:00", 1), ("-01:00", 3)):
        options = {} if zone is None else {"timezone": zone}
        ledger = load_ledger(path, **options)  # type: ignore[arg-type]
        result = reconcile(ledger, load_processor(_processor(3)), as_of="2025-05-31", backend=backend)
        assert _counts(result)["ledger"][2] == after, (zone, backend.name)


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("date_format", "%d/%m/%j", "%j in '%d/%m/%j' is not a directive it reads (use %d %m %Y"),
        ("date_format", "%d/%m", "'%d/%m' has no year"),
        ("date_format", "%d/%m/%Y %I:%M", "%I (12-hour clock) goes with %p"),
        ("date_format", "%d[%m]%Y", "'[' in '%d[%m]%Y' cannot be read"),
        ("timezone", "Mars/Olympus", "'Mars/Olympus' is not a time zone"),
        ("currency", "EURO", "'EURO' is not an ISO 4217 code"),
    ],
)
def test_a_bad_option_is_refused_naming_it(tmp_path: Path, option: str, value: str, words: str) -> None:
    with pytest.raises(InputError, match=f"^{option}: ") as caught:
        load_ledger(_ledger(tmp_path, ["2025-05-01"]), **{option: value})  # type: ignore[arg-type]
    assert words in str(caught.value)


def test_the_options_reach_the_side(tmp_path: Path) -> None:
    loaded = load_ledger(
        _ledger(tmp_path, ["2025-05-01"]), date_format="%d.%m.%Y", timezone=" Europe/Berlin ", currency="eur"
    )
    described = loaded.described
    assert (described.date_format, described.timezone, described.currency) == (
        "%d.%m.%Y",
        "Europe/Berlin",
        "EUR",
    )


def _cli(tmp_path: Path, ledger: Path, *options: str) -> int:
    processor = tmp_path / "export.csv"
    _processor(3).to_csv(processor, index=False)
    return main(
        [
            "reconcile",
            *("--ledger", str(ledger), "--processor", str(processor)),
            *(
                "--output-dir",
                str(tmp_path / "out"),
                "--period-start",
                "2025-05-01",
                "--period-end",
                "2025-05-31",
            ),
            *options,
        ]
    )


def test_the_command_takes_a_date_format_for_an_undecided_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = _ledger(tmp_path, ["05/01/2025", "05/02/2025", "06/01/2025"])
    assert _cli(tmp_path, ledger) == 2
    assert "05/01/2025 is 5 January or May 1st" in capsys.readouterr().err
    assert _cli(tmp_path, ledger, "--ledger-date-format", "%m/%d/%Y") == 0
    assert "ok: 0 exceptions" in capsys.readouterr().out  # May 1st and 2nd; June 1st outside
    assert _cli(tmp_path, ledger, "--date-format", "%d/%m/%Y") == 0


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--ledger-date-format", "%d/%m/%Q"),
        ("--date-format", "%H:%M"),
        ("--processor-timezone", "Europe/Nowhere"),
        ("--timezone", "+25:00"),
        ("--ledger-currency", "XYZ"),
    ],
)
def test_a_bad_option_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    assert _cli(tmp_path, _ledger(tmp_path, ["2025-05-01"]), option, value) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {option}: ") and error.count("\n") == 1


def test_inspect_says_how_the_dates_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["13/05/2025", "05/06/2025"], (), "dates: day first, %d/%m/%Y (decided from the rows)"),
        (["05/13/2025"], (), "dates: month first, %m/%d/%Y (decided from the rows)"),
        (["05/01/2025"], (), "dates: day/month order undecided: 05/01/2025 is 5 January or May 1st"),
        (["05/01/2025"], ("--date-format", "%d/%m/%Y"), "dates: %d/%m/%Y (--date-format)"),
    ]
    for dates, options, line in cases:
        assert main(["reconcile", "inspect", str(_ledger(tmp_path, dates)), *options]) == 0
        assert any(shown.startswith(line) for shown in capsys.readouterr().out.splitlines()), line
