"""Formula injection through a semicolon or a tab (issue 34), read as a spreadsheet would read it.

A European Excel splits a CSV line on ``;`` and ignores the quotes around a comma field that do
not open its own field, so ``INV-9;=cmd|' /C calc'!A0`` in a quoted cell still gives a cell
starting with ``=``; a tab-separated reader does the same with tabs, and any of them starts a row
at a line break inside a cell. Every check here reads the written file with Python's ``csv``
module splitting on ``;`` and on tabs, as those readers do.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import uuid
from pathlib import Path

import httpx
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolkit.cli import main
from toolkit.outputs import neutralise_cell, neutralise_cells
from toolkit.sandbox.embedded import RunningSandbox
from toolkit.views import write_frame

#: What a spreadsheet reads as a number, not a formula.
NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
FORMULA = ("=", "+", "-", "@")
#: The readers: Excel in a semicolon locale, a tab-separated import, and the comma reader.
DELIMITERS = (";", "\t", ",")

HOSTILE_KEYS = [
    "INV-9;=cmd|' /C calc'!A0;",
    "INV-1;+1+1",
    "INV-2;-2+3;x",
    "INV-3;@SUM(1)",
    'INV-4;"=1+1',  # a ``;`` reader drops the quote opening its field
    "INV-5; =1+1",  # a reader trimming spaces
    "INV-6;\t=1+1",
    "INV-7\t=HYPERLINK(1)",
    "12;-3",  # the field runs on into the next cell: ``-3,missing_in_processor,...``
    "-12",  # first column: a ``;`` reader's first field is ``-12,5+cmd|...``
]


def dangerous(field: str) -> bool:
    """Whether a spreadsheet could take ``field`` for a formula: it starts with ``=``, ``+``,
    ``-`` or ``@`` and is not a plain number, as it is or as a reader that trims spaces and drops
    leading double quotes sees it (tabs and line breaks are the readers' separators)."""
    seen = field.lstrip(' "').rstrip(" ")
    return any(f.startswith(FORMULA) and not NUMBER.fullmatch(f) for f in (field, seen))


def dangerous_fields(path_or_text: Path | str) -> dict[str, list[str]]:
    """Per reader delimiter, the fields of a CSV file (or text) a spreadsheet could execute."""
    text = path_or_text.read_text(encoding="utf-8") if isinstance(path_or_text, Path) else path_or_text
    found = {}
    for delimiter in DELIMITERS:
        rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        found[delimiter] = [field for row in rows for field in row if dangerous(field)]
    return found


def assert_safe(path_or_text: Path | str) -> None:
    assert dangerous_fields(path_or_text) == {d: [] for d in DELIMITERS}


# ---------------------------------------------------------------------------------------------
# The rule, cell by cell


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("INV-9;=cmd|' /C calc'!A0;", "INV-9;'=cmd|' /C calc'!A0;"),
        ("=1;=2\t+3\n@4\r-x", "'=1;'=2\t'+3\n'@4\r'-x"),
        ('a;"=1', "a;'\"=1"),
        ("a; =1", "a;' =1"),
        ("a;'=1", "a;'=1"),  # the user's own apostrophe: already text
        ("12;-3", "12;'-3"),  # the last part runs on into the next cell
        ("12;-3;4", "12;-3;4"),  # a number between two semicolons is a number
        ("1\t-2.5e3\t3", "1\t-2.5e3\t3"),
        ("1\n-2\n", "1\n-2\n"),
        ("a;-2\nb", "a;'-2\nb"),  # a number only between separators of one kind
        ("a;-2\tb", "a;'-2\tb"),  # a ``;`` reader sees ``-2<tab>b``
        ("\t=1", "'\t'=1"),
        ("-12.00", "-12.00"),
        ("-12;x", "'-12;x"),
        ("INV;-", "INV;'-"),
        ("a;b\tc", "a;b\tc"),
        ("", ""),
    ],
)
def test_the_rule(text: str, expected: str) -> None:
    assert neutralise_cell(text) == expected
    assert neutralise_cells(pa.array([text])).to_pylist() == [expected]


def test_a_row_start_keeps_no_signed_number() -> None:
    """The first cell of a row begins the first field of every reader, which runs on past it."""
    assert neutralise_cell("-12", row_start=True) == "'-12"
    assert neutralise_cells(pa.array(["-12", "12", None]), row_start=True).to_pylist() == ["'-12", "12", None]
    assert neutralise_cell("12", row_start=True) == "12"


def test_vectorised_fast_path_and_chunks() -> None:
    """No risky cell: the array itself comes back; chunked arrays keep their chunks and nulls."""
    plain = pa.array(["a", "-1.50", None, "x;y"])
    assert neutralise_cells(plain) is plain
    chunked = pa.chunked_array([["a;=1", None], [], ["b", "=2"]])
    out = neutralise_cells(chunked)
    assert isinstance(out, pa.ChunkedArray)
    assert out.to_pylist() == ["a;'=1", None, "b", "'=2"]
    large = neutralise_cells(pa.array(["a;=1"], type=pa.large_string()))
    assert large.type == pa.large_string() and large.to_pylist() == ["a;'=1"]


# ---------------------------------------------------------------------------------------------
# Properties


def reader_fields(cell: str, delimiter: str, *, row_start: bool) -> list[str]:
    """The fields a reader splitting on ``delimiter`` and at line breaks begins inside ``cell``,
    written in the middle of a row: the field before its first separator began in an earlier cell
    (unless ``row_start``), and its last field runs on into the next cell."""
    fields: list[str] = []
    for index, row in enumerate(re.split("[\r\n]", cell + ",next")):
        parts = row.split(delimiter)
        fields += parts if index or row_start else parts[1:]
    return fields


RISKY_TEXT = st.text(alphabet=st.sampled_from(list(";\t\r\n=+-@\" '.,eE0123456789ax'")), max_size=14)
ANY_TEXT = st.one_of(RISKY_TEXT, st.text(max_size=20))


@settings(max_examples=600)
@given(text=ANY_TEXT, row_start=st.booleans())
@example(text="INV-9;=cmd|' /C calc'!A0;", row_start=False)
@example(text="\t-1", row_start=False)
@example(text="-\u0663", row_start=False)  # an Arabic-Indic digit: no number to a spreadsheet
def test_no_part_starts_a_formula_and_both_functions_agree(text: str, row_start: bool) -> None:
    out = neutralise_cell(text, row_start=row_start)
    assert out.replace("'", "") == text.replace("'", "")  # only apostrophes are added
    assert neutralise_cells(pa.array([text]), row_start=row_start).to_pylist() == [out]
    # The comma reader: the whole cell, a number only where no reader sees more than it.
    if not row_start and NUMBER.fullmatch(text):
        assert out == text
    else:
        assert not dangerous(out) and not out.startswith(("\t", "\r"))
    for delimiter in (";", "\t"):
        # The brief's split: no part begins a formula, unless it is a number.
        parts = re.split("[;\t]", out)[1:]
        assert not [p for p in parts if p.startswith(FORMULA) and not NUMBER.fullmatch(p)]
        assert not [f for f in reader_fields(out, delimiter, row_start=row_start) if dangerous(f)]


@settings(max_examples=300)
@given(cells=st.lists(ANY_TEXT, min_size=1, max_size=3))
def test_python_csv_readers_see_no_formula(cells: list[str]) -> None:
    """A row written as the toolkit writes CSV (minimal quoting), read by ``;`` and tab readers."""
    row = [neutralise_cell(c, row_start=i == 0) for i, c in enumerate(cells)]
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\n").writerow(row)
    assert_safe(buffer.getvalue())
    as_arrays = [
        neutralise_cells(pa.array([c]), row_start=i == 0).to_pylist()[0] for i, c in enumerate(cells)
    ]
    assert as_arrays == row


# ---------------------------------------------------------------------------------------------
# The files the toolkit writes


def test_exceptions_csv_of_a_reconcile_run(tmp_path: Path) -> None:
    ledger, processor = tmp_path / "ledger.csv", tmp_path / "processor.csv"
    with ledger.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["merchantReferenceId", "amount", "currency", "status"])
        writer.writerows([key, "1.00", "USD", "success"] for key in HOSTILE_KEYS)
        writer.writerow(["both", "-12.00", "USD", "success"])
        writer.writerow(["rejected", "1.00", "USD", "x;=1+2"])  # an unknown status
    processor.write_text(
        "merchantReferenceId,amount,currency,status\nboth,-12.01,USD,success\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(out)]
    assert main([*args, "--max-exceptions", "100"]) == 0
    written = out / "exceptions.csv"
    assert_safe(written)
    for name in ("summary.csv",):
        assert_safe(out / name)
    frame = pd.read_csv(written, dtype=str, keep_default_na=False)
    keys = set(frame["merchantReferenceId"])
    assert {"INV-9;'=cmd|' /C calc'!A0;", "INV-4;'\"=1+1", "12;'-3", "'-12", "INV-7\t'=HYPERLINK(1)"} <= keys
    both = frame[frame["merchantReferenceId"] == "both"].iloc[0]
    assert (both["ledger_amount"], both["processor_amount"]) == ("-12.00", "-12.01")  # numbers stay
    assert "x;'=1+2" in set(frame["ledger_status"])


def test_a_frame_written_by_a_notebook(tmp_path: Path) -> None:
    """The first column begins every reader's first field: a signed number there is text."""
    frame = pd.DataFrame(
        {
            "merchantReferenceId": ["-12", *HOSTILE_KEYS],
            "note": ["5+cmd|' /C calc'!A0", *HOSTILE_KEYS],
            "amount": ["-0.10"] * (len(HOSTILE_KEYS) + 1),
            "action": [{"url": "a;=1"}] * (len(HOSTILE_KEYS) + 1),
        }
    )
    path = write_frame(frame, tmp_path / "out", "payments.csv")
    assert path is not None
    assert_safe(path)
    back = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert back.iloc[0].tolist() == ["'-12", "5+cmd|' /C calc'!A0", "-0.10", '{"url": "a;\'=1"}']
    assert list(back["note"])[1:3] == ["INV-9;'=cmd|' /C calc'!A0;", "INV-1;'+1+1"]


def test_a_frame_with_its_index_and_hostile_labels(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a;=x": ["1"], "n": ["=2"]}, index=pd.Index(["-3"], name="-k"))
    path = write_frame(frame, tmp_path / "out", "indexed.csv")
    assert path is not None
    assert_safe(path)
    assert path.read_text(encoding="utf-8").splitlines() == ["'-k,a;'=x,n", "'-3,1,'=2"]


def _post_payment(sandbox: RunningSandbox, key: str) -> None:
    body = {
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "amount": 1,
        "currency": "USD",
        "merchantReferenceId": key,
        "customerEmail": "buyer@example.com",
        "returnUrl": "https://shop.example/r",
    }
    response = httpx.post(
        f"{sandbox.base_url}/payment",
        content=json.dumps(body),
        headers={**_headers(sandbox), "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text


def _headers(sandbox: RunningSandbox) -> dict[str, str]:
    return {"X-API-KEY": sandbox.api_key.get_secret_value(), "X-Timestamp": str(time.time_ns() // 1_000_000)}


def test_the_sandbox_csv_export(sandbox: RunningSandbox) -> None:
    unique = uuid.uuid4().hex[:8]
    keys = [f"{unique}{key}" for key in HOSTILE_KEYS]
    for key in keys:
        _post_payment(sandbox, key)
    response = httpx.get(
        f"{sandbox.base_url}/sandbox/payments", params={"format": "csv"}, headers=_headers(sandbox)
    )
    assert response.status_code == 200
    assert_safe(response.text)
    rows = [r for r in csv.DictReader(io.StringIO(response.text)) if r["merchantReferenceId"][:8] == unique]
    assert {r["merchantReferenceId"] for r in rows} >= {
        f"{unique}INV-9;'=cmd|' /C calc'!A0;",
        f"{unique}12;'-3",
    }
    assert {r["amount"] for r in rows} == {"1.00"}
