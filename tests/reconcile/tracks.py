"""Tracked runs from files: a day's ledger and processor files written, then reconciled on a track."""

from __future__ import annotations

from pathlib import Path

from toolkit.reconcile import ReconciliationResult, load_ledger, load_processor, reconcile

HEADER = "merchantReferenceId,amount,currency,status\n"


def sides(folder: Path, ledger: dict[str, str], processor: dict[str, str]) -> tuple[Path, Path]:
    """Write a ledger and a processor file of ``key -> "amount currency status"``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in (("ledger.csv", ledger), ("processor.csv", processor)):
        path = folder / name
        path.write_text(
            HEADER + "".join(f"{k},{','.join(v.split())}\n" for k, v in rows.items()), encoding="utf-8"
        )
        paths.append(path)
    return paths[0], paths[1]


def run(
    folder: Path, ledger: dict[str, str], processor: dict[str, str], day: str, track: str = "t"
) -> ReconciliationResult:
    led, pro = sides(folder / day, ledger, processor)
    return reconcile(load_ledger(led), load_processor(pro), track=track, as_of=day)
