"""report.xlsx stays a workbook Excel opens whatever text reaches it (issue 34).

A control character in ``--environment`` or in a file name, or a file name that is no UTF-8 (a
lone surrogate in Python), made a workbook no reader could open while the run said ``ok``. Every
text is cleaned the same way: characters XML 1.0 cannot hold are dropped, a lone surrogate shows
as U+FFFD. Read back with openpyxl, as a controller's spreadsheet would read it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.cli import main
from toolkit.reconcile import ReconciliationResult, load_ledger, load_processor, reconcile
from toolkit.reconcile.render.report import exceptions_text_table
from toolkit.reconcile.render.workbook import write_xlsx

XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
SURROGATE = re.compile("[\ud800-\udfff]")
WHEN = "2026-01-02 03:04:05 UTC"


def cleaned(text: str) -> str:
    """What the workbook shows of ``text``; an XML reader reads a carriage return as a line feed."""
    text = XML_ILLEGAL.sub("", SURROGATE.sub("\ufffd", text))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def texts_of(path: Path) -> dict[str, list[str]]:
    """Every text cell of every sheet, opened as Excel would open it."""
    workbook = openpyxl.load_workbook(path)
    return {
        sheet.title: [v for row in sheet.iter_rows(values_only=True) for v in row if isinstance(v, str)]
        for sheet in workbook.worksheets
    }


@functools.cache
def small_result() -> ReconciliationResult:
    """One payment matched, one only in the ledger (made once: a run takes a while)."""

    def frame(keys: list[str]) -> pd.DataFrame:
        n = len(keys)
        return pd.DataFrame(
            {
                "merchantReferenceId": keys,
                "amount": ["1.00"] * n,
                "currency": ["USD"] * n,
                "status": ["success"] * n,
            }
        )

    return reconcile(load_ledger(frame(["m1", "m2"])), load_processor(frame(["m1"])))


def test_a_run_with_control_characters_writes_a_workbook_excel_opens(tmp_path: Path) -> None:
    ledger, processor = tmp_path / "led\x01ger.csv", tmp_path / "processor.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status\nm1,1.00,USD,success\nm2,2.00,USD,success\n"
    )
    processor.write_text("merchantReferenceId,amount,currency,status\nm1,1.00,USD,success\n")
    out = tmp_path / "out"
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--output-dir", str(out)]
    assert main([*args, "--environment", "prod\x07\x1b", "--title", "Night\x0b run"]) == 0
    texts = texts_of(out / "report.xlsx")
    summary = texts["Summary"]
    assert summary[:2] == ["Data from: prod", "Night run"]
    assert any("ledger.csv" in t for t in summary)  # the source, its control character dropped
    assert texts["missing_in_processor"][:1] == ["merchantReferenceId"]
    every = [t for sheet in texts.values() for t in sheet]
    assert not [t for t in every if XML_ILLEGAL.search(t)]


def test_every_text_is_cleaned_alike(tmp_path: Path) -> None:
    """Title, environment, sources, sheet names and cells; a name undecodable as UTF-8 included."""
    result = small_result()
    table = exceptions_text_table(result)
    odd = "odd\x07/cat?"  # a category no engine makes, with what a sheet name cannot hold
    table = table.set_column(
        table.column_names.index("category"), "category", pa.array([odd] * table.num_rows, pa.string())
    )
    table = table.set_column(
        0, table.column_names[0], pc.binary_join_element_wise(table.column(0), "\x1f", "")
    )
    path = tmp_path / "report.xlsx"
    write_xlsx(
        result,
        path,
        title="Report \udcff\x00",
        environment="file led\udcffger\x08.csv",
        generated_at=WHEN,
        table=table,
    )
    texts = texts_of(path)
    assert texts["Summary"][:3] == ["Data from: file led\ufffdger.csv", "Report \ufffd", f"Generated {WHEN}"]
    (sheet,) = [name for name in texts if name != "Summary"]
    assert sheet == "odd_cat_"
    assert "m2" in texts[sheet]  # the key, its unit separator dropped


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    title=st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
    environment=st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
)
def test_any_title_and_environment(tmp_path: Path, title: str, environment: str) -> None:
    result = small_result()
    path = tmp_path / "report.xlsx"
    write_xlsx(
        result,
        path,
        title=title,
        environment=environment,
        generated_at=WHEN,
        table=exceptions_text_table(result),
    )
    summary = texts_of(path)["Summary"]
    assert summary[0] == cleaned(f"Data from: {environment}")
    shown_title = cleaned(title)
    assert summary[1] == (shown_title or f"Generated {WHEN}")  # an empty cell holds no text
