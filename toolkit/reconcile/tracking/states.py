"""The state of an exception across the runs of a track: its id, its facts, new / open /
acknowledged, and what was resolved.

Each exception of a tracked run gets a stable ``exceptionId`` and a ``state``:

* ``new``: not in the previous run of the track; ``firstSeen`` is this run's cut-off;
* ``open``: in the previous run too; ``firstSeen`` is the cut-off of the first run of the unbroken
  streak in which it has been seen, ``ageDays`` the whole days from then to this cut-off;
* ``acknowledged``: a person acknowledged it (``acknowledge``) and its facts (amounts, currencies,
  statuses on both sides, a duplicate's number of rows, a rejected row's amount as written) are
  still those they saw; when the facts change the acknowledgement lapses for good and the
  exception is ``open`` again, ``stateReason`` saying what changed;
* ``resolved``, listed apart (``Tracking.resolved``): in the previous run, not in this one; with
  when it was first seen, last seen, and the cut-off at which it was gone.

Rules where the issue leaves the choice:

* ``exceptionId`` is ``E`` + the first 16 hex digits of the sha256 of the track, the category and
  the key (``merchantReferenceId``). A rejected row may have no key, or share it with another
  rejected row, so its id also takes its side and its row number. The exception of a key's money
  returned (its ``kind`` a refund, chargeback, ...) also takes its kind, so that an
  acknowledgement of the charge never covers its refund. Should a (key, category) repeat
  within a run all the same, the repeats are numbered in order.
* An acknowledgement is of the facts of the latest run; it holds while the exception stays and its
  facts stay the same. Once a run did not hold it (a re-run of a day included), it has lapsed for
  good: running the day again with the old facts does not bring it back. An exception that is
  resolved and comes back later is ``new`` again, with a new ``firstSeen``, and its old
  acknowledgement does not hold.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from toolkit.outputs import cell_text
from toolkit.reconcile.tracking.signing import FACTS_VERSION
from toolkit.reconcile.tracking.store import Entry, parse_time, rows_of, runs_of, utc_text

#: States of an exception in a run, in report order (``resolved`` ones are listed apart).
STATES: tuple[str, ...] = ("new", "open", "acknowledged")
#: The facts an acknowledgement is of: when one of them changes, it lapses.
FACT_COLUMNS: tuple[str, ...] = (
    "ledger_amount",
    "processor_amount",
    "ledger_currency",
    "processor_currency",
    "ledger_status",
    "processor_status",
)
#: What else an acknowledgement is of, stored after ``FACT_COLUMNS``: every row of a duplicate,
#: each with its amount, currency and status (two charges of 100.00 acknowledged are not a third
#: of 99,999.00, nor four), and a rejected row's amount as written (10.00 acknowledged is not
#: 50000.00). An acknowledgement recorded before they were added is of the first facts only.
MORE_FACTS: tuple[str, ...] = ("rows", "amount as written")
#: ``appears 4 times in the processor (rows 2, 5, 9)``, or with each row's amount, currency and
#: status when they differ (``rows 2: 100.00 USD success, 5: ...``): a duplicate's detail
#: (``engine.duplicate_rows``).
_DUPLICATE = re.compile(r"^appears (\d+) times in the (ledger|processor) \(rows (.*)\)$", re.DOTALL)
_ROW_NUMBER = re.compile(r"(?:^|, )\d+: ")
#: Columns of ``Tracking.resolved``.
RESOLVED_COLUMNS: tuple[str, ...] = (
    "exceptionId",
    "merchantReferenceId",
    "category",
    *FACT_COLUMNS,
    "firstSeen",
    "lastSeen",
    "resolvedAt",
)


def age_days(first_seen: str, as_of: datetime) -> int:
    """Whole days from ``first_seen`` to ``as_of`` (rounded down, never negative)."""
    return max(0, (as_of - parse_time(first_seen)) // timedelta(days=1))


# ---------------------------------------------------------------------------------------------
# Ids and facts


def exception_ids(track: str, exceptions: pd.DataFrame, sides: dict[str, str]) -> list[str]:
    """The stable id of each exception (see the module docstring); ``sides`` maps a source to
    its side, for rejected rows."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    kinds = exceptions["kind"].tolist() if "kind" in exceptions.columns else [""] * len(exceptions)
    for key, category, kind, source, row in zip(
        exceptions["merchantReferenceId"].tolist(),
        exceptions["category"].astype(str).tolist(),
        kinds,
        exceptions["source"].tolist(),
        exceptions["source_row"].tolist(),
        strict=True,
    ):
        parts = [track, category, cell_text(key)]
        if cell_text(kind) not in ("", "payment"):  # a refund's exception is not its charge's
            parts.append(cell_text(kind))
        if category == "rejected_row":
            parts += [sides.get(cell_text(source), cell_text(source)), cell_text(row)]
        base = "\x1f".join(parts)
        repeat = seen.get(base, 0)
        seen[base] = repeat + 1
        if repeat:
            base += f"\x1f#{repeat}"
        ids.append("E" + hashlib.sha256(base.encode("utf-8")).hexdigest()[:16])
    return ids


def exception_facts(exceptions: pd.DataFrame, rejected: pd.DataFrame) -> list[list[str]]:
    """Each exception's ``FACT_COLUMNS`` and ``MORE_FACTS``, as text; ``rejected`` is the
    result's rejected rows, as written."""
    columns = [[cell_text(v) for v in exceptions[c].tolist()] for c in FACT_COLUMNS]
    written = {
        (cell_text(source), int(row)): cell_text(amount)
        for source, row, amount in zip(
            rejected["source"], rejected["source_row"], rejected["amount"], strict=True
        )
    }
    rows, amounts = [], []
    for index, (category, detail, source, row) in enumerate(
        zip(
            exceptions["category"].astype(str),
            exceptions["detail"],
            exceptions["source"],
            exceptions["source_row"],
            strict=True,
        )
    ):
        side = category.removeprefix("duplicate_in_")
        if side in ("ledger", "processor"):
            shown = [columns[FACT_COLUMNS.index(f"{side}_{n}")][index] for n in _ROW_FACTS]
            rows.append(_duplicate_rows(cell_text(detail), shown))
        else:
            rows.append("")
        rejected_row = category == "rejected_row"
        amounts.append(written.get((cell_text(source), int(row)), "") if rejected_row else "")
    return [list(fact) for fact in zip(*columns, rows, amounts, strict=True)]


#: What a duplicate's row is known by: its amount, currency and status.
_ROW_FACTS = ("amount", "currency", "status")


def _duplicate_rows(detail: str, shown: list[str]) -> str:
    """A duplicate's rows as a fact: how many, then each one's amount, currency and status,
    sorted (``3 rows: 100.00 USD success; 100.00 USD success; 99999.00 USD success``), so that a
    row changed, added or removed changes it, and the file re-sorted or a row inserted above does
    not. The detail lists the rows' values only when they differ; else each is the row shown."""
    found = _DUPLICATE.match(detail)
    if found is None:
        return ""
    count, _, listed = found.groups()
    if _ROW_NUMBER.match(listed):
        each = [item for item in _ROW_NUMBER.split(listed) if item]
    else:
        each = [" ".join(shown)] * int(count)
    return f"{count} rows: " + "; ".join(sorted(each))


def _changes(before: Sequence[str], after: Sequence[str]) -> str:
    """What changed, fact by fact, of the facts ``before`` has (``MORE_FACTS`` may be missing)."""
    return ", ".join(
        f"{name} {a or '(none)'} -> {b or '(none)'}"
        for name, a, b in zip((*FACT_COLUMNS, *MORE_FACTS), before, after, strict=False)
        if a != b
    )


# ---------------------------------------------------------------------------------------------
# The history of a track, as states


def lapsed_acknowledgements(chain: list[Entry], signoffs: dict[str, Entry]) -> dict[str, int]:
    """The acknowledgements a run after them did not hold (their facts changed, or the exception
    was resolved), with that run's number: they lapsed for good, so a re-run of the day with the
    old facts (compared with the run before the day, which predates the lapse) keeps them lapsed."""
    runs = [(run.number, run.payload["run"], rows_of(run)) for run in runs_of(chain)]
    lapsed: dict[str, int] = {}
    for exception_id, signoff in signoffs.items():
        if signoff.kind != "ack":
            continue
        for number, run_number, rows in runs:
            row = rows.get(exception_id)
            if number > signoff.number and (row is None or row[3] != "acknowledged"):
                lapsed[exception_id] = int(run_number)
                break
    return lapsed


def _state(
    exception_id: str,
    facts: list[str],
    previous: Entry | None,
    before: dict[str, list[Any]],
    signoff: Entry | None,
    lapsed_in: int | None = None,
) -> tuple[str, str]:
    """(state, reason) of an exception of this run; see the module docstring.

    A sign-off counts when it came after the previous run ("fresh"), or, for an acknowledgement,
    when the exception was acknowledged in the previous run; once an acknowledgement lapsed, or
    the exception was resolved, it no longer counts. The reason of a lapse or a reopening is
    carried while the exception stays open.
    """
    seen_before = exception_id in before
    base = "open" if seen_before else "new"
    previous_state, previous_reason = (
        (before[exception_id][3], before[exception_id][5]) if seen_before else ("", "")
    )
    carried = (
        previous_reason
        if previous_state == "open" and previous_reason.startswith(("reopened", "acknowledgement"))
        else ""
    )
    if signoff is None:
        return base, carried
    fresh = signoff.number > (previous.number if previous is not None else 0)
    who = f"{signoff.payload['by']} at {signoff.at}"
    if signoff.kind == "reopen":
        return (base, f"reopened by {who}: {signoff.payload['note']}") if fresh else (base, carried)
    if not (fresh or previous_state == "acknowledged"):
        return base, carried
    if lapsed_in is not None:
        return base, f"acknowledgement by {who} lapsed in run {lapsed_in}"
    acknowledged_facts = signoff.payload["facts"][exception_id]
    if acknowledged_facts == facts[: len(acknowledged_facts)]:
        return "acknowledged", f"acknowledged by {who}: {signoff.payload['note']}"
    if signoff.payload.get("factsVersion", 1) < FACTS_VERSION and facts[len(FACT_COLUMNS)]:
        return base, (
            f"acknowledgement by {who} lapsed: it was given when an acknowledgement covered a "
            f"duplicate's number of rows only, and now covers each row; check them and acknowledge "
            f"again ({facts[len(FACT_COLUMNS)]})"
        )
    return base, f"acknowledgement by {who} lapsed: {_changes(acknowledged_facts, facts)}"


def judge(
    ids: list[str],
    exceptions: pd.DataFrame,
    facts: list[list[str]],
    previous: Entry | None,
    signed: tuple[dict[str, Entry], dict[str, int]],
    as_of: datetime,
) -> tuple[list[list[Any]], list[int]]:
    """Each exception of this run (``ids``, the tracked ``exceptions``, their ``facts``) judged
    against the previous run and the sign-offs (``signed``: each exception's latest sign-off, and
    the acknowledgements that lapsed): its row as the run records it, [id, category, key, facts,
    state, firstSeen, reason], and its age in whole days at ``as_of``."""
    signoffs, lapsed = signed
    before = rows_of(previous) if previous is not None else {}
    as_of_text = utc_text(as_of)
    rows: list[list[Any]] = []
    ages: list[int] = []
    for exception_id, category, key, fact in zip(
        ids,
        exceptions["category"].astype(str).tolist(),
        exceptions["merchantReferenceId"].tolist(),
        facts,
        strict=True,
    ):
        state, reason = _state(
            exception_id, fact, previous, before, signoffs.get(exception_id), lapsed.get(exception_id)
        )
        first = before[exception_id][4] if exception_id in before else as_of_text
        ages.append(age_days(first, as_of))
        rows.append([exception_id, category, cell_text(key), fact, state, first, reason])
    return rows, ages


def resolved_rows(previous: Entry | None, ids: list[str], as_of: datetime) -> list[list[Any]]:
    """The previous run's exceptions that are not among this run's ``ids``, as rows of
    ``RESOLVED_COLUMNS``: first seen, last seen (the previous run's cut-off), resolved at ``as_of``."""
    if previous is None:
        return []
    current = set(ids)
    return [
        [
            exception_id,
            row[1],
            row[0],
            *row[2][: len(FACT_COLUMNS)],
            row[4],
            previous.payload["asOf"],
            utc_text(as_of),
        ]
        for exception_id, row in rows_of(previous).items()
        if exception_id not in current
    ]
