"""Several statements read as one: repeats counted once, a missing day shown as a gap, and the
ways of naming the files (a folder, a glob, a list)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from toolkit.errors import InputError
from toolkit.reconcile.bank import read_statements

DATA = Path(__file__).parent / "data"
DAYS = ["camt053_day1.xml", "camt053_day2.xml", "camt053_day2_resent.xml", "camt053_day3.xml"]


def test_consecutive_days_with_a_resent_day_count_each_entry_once() -> None:
    result = read_statements([DATA / name for name in DAYS])
    references = result.entries.column("entry_reference").to_pylist()
    assert len(references) == len(set(references)) == 6
    assert sum(result.entries.column("amount_minor").to_pylist()) == 1821278 - 1556827
    repeated = result.repeated.to_pylist()
    assert [(r["source"], r["kept_source"], r["entry_reference"]) for r in repeated] == [
        ("camt053_day2_resent.xml", "camt053_day2.xml", "ABNA20250304000001"),
        ("camt053_day2_resent.xml", "camt053_day2.xml", "ABNA20250304000002"),
    ]
    statements = result.statements.to_pylist()
    assert [s["repeat_of"] for s in statements] == [None, None, "camt053_day2.xml: line 10", None]
    assert result.gaps.num_rows == 0


def test_a_missing_day_is_a_gap_between_the_statements_around_it() -> None:
    result = read_statements([DATA / "camt053_day3.xml", DATA / "camt053_day1.xml"])
    (gap,) = result.gaps.to_pylist()
    assert (gap["before_statement"], gap["before_source"], gap["before_closing_minor"]) == (
        "20250303-1",
        "camt053_day1.xml",
        1562528,
    )
    assert (gap["after_statement"], gap["after_source"], gap["after_opening_minor"]) == (
        "20250305-1",
        "camt053_day3.xml",
        1811278,
    )
    assert (gap["before_closing_date"], gap["after_opening_date"]) == (
        dt.date(2025, 3, 3),
        dt.date(2025, 3, 5),
    )
    assert gap["difference_minor"] == 1811278 - 1562528


def test_entries_without_a_reference_are_repeats_only_across_statements(tmp_path: Path) -> None:
    """Two identical unreferenced entries in one statement are two; the same pair resent is not four."""
    text = (DATA / "mt940_two_days.sta").read_text()
    first = text.split("-\n")[0] + "-\n"
    doubled = first.replace(
        ":62F:C250303EUR4508,45",
        ":61:2503030303D1,00NCHGNONREF\n:86:805?20Fee\n" * 2 + ":62F:C250303EUR4506,45",
    )
    (tmp_path / "a.sta").write_text(doubled)
    (tmp_path / "b.sta").write_text(doubled)
    result = read_statements(tmp_path)
    fees = [r for r in result.entries.to_pylist() if r["amount_minor"] == -100]
    assert [(r["source"], r["entry_reference"]) for r in fees] == [("a.sta", ""), ("a.sta", "")]
    assert result.repeated.num_rows == 5 and result.entries.num_rows == 5


def test_a_folder_a_glob_and_a_list_name_the_same_files(tmp_path: Path) -> None:
    for name in DAYS:
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / ".hidden").write_text("not read")
    by_folder = read_statements(tmp_path)
    by_glob = read_statements(str(tmp_path / "camt053_day*.xml"))
    by_list = read_statements([tmp_path / "camt053_day1.xml", str(tmp_path / "camt053_day[23]*.xml")])
    assert by_folder.entries.equals(by_glob.entries) and by_folder.entries.equals(by_list.entries)
    assert by_folder.statements.num_rows == 4


def test_the_same_file_named_twice_is_read_once() -> None:
    result = read_statements([DATA / "camt053_day1.xml", str(DATA / "camt053_day1*.xml")])
    assert result.statements.num_rows == 1 and result.repeated.num_rows == 0


def test_formats_mixed_in_one_folder_are_each_recognised_by_content(tmp_path: Path) -> None:
    # Names that say nothing of the format: the content decides.
    for n, name in enumerate(
        ["camt053_day1.xml", "mt940_two_days.sta", "bai2_two_days.bai2", "ofx2_card.qfx"]
    ):
        shutil.copy(DATA / name, tmp_path / f"statement{n}.txt")
    formats = read_statements(tmp_path).statements.column("format").to_pylist()
    assert sorted(set(formats)) == ["bai2", "camt.053.001.02", "mt940", "ofx"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("nowhere.xml", "nowhere.xml: no such file or folder"),
        ("*.nothing", "*.nothing: no file matches"),
    ],
)
def test_names_that_find_nothing_are_refused(tmp_path: Path, given: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        read_statements(str(tmp_path / given))
    assert str(raised.value).endswith(message)
