"""Sandbox-only payouts and bank (same auth): the payouts, the processor's payout report, the
bank's daily camt.053 statement, and the controls that make the bank lose, delay or change a
payout or book a deposit no payout explains. The rules are in ``payouts.py`` and ``bank.py``.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from toolkit.control_models import PAYOUT_COLUMNS, BankChangeRequest, BankDelayRequest, BankDepositRequest
from toolkit.money import fits_currency, from_minor, to_minor
from toolkit.sandbox import bank, store
from toolkit.sandbox.db import Database
from toolkit.sandbox.deps import Authenticated, DbDep
from toolkit.sandbox.http import BadRequest, Conflict, NotFound, build, ok, read_object
from toolkit.sandbox.openapi import CHARGEABLE, operation
from toolkit.sandbox.payouts import PROCESSOR_NAME, Payout, payout_record, payouts, report_csv, utc_day

router = APIRouter(prefix="/sandbox", tags=["sandbox controls"], dependencies=[Authenticated])

_STR = {"type": "string"}
_INT = {"type": "integer"}
_NUM = {"type": "number"}
_DAY = {"type": "string", "format": "date"}
_DAY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_PAYOUT = {
    "type": "object",
    "required": list(PAYOUT_COLUMNS),
    "properties": {
        "payoutId": _STR,
        "currency": _STR,
        "payoutDate": _DAY,
        "status": {"type": "string", "enum": ["paid", "pending"]},
        "payments": _INT,
        "gross": _NUM,
        "fee": _NUM,
        "net": _NUM,
        "statementDescriptor": _STR,
    },
}
_CONTROL = {
    "type": "object",
    "required": ["payoutId", "lost", "delayDays", "amount"],
    "properties": {
        "payoutId": _STR,
        "lost": {"type": "boolean"},
        "delayDays": _INT,
        "amount": {"type": ["number", "null"]},
    },
}
_DEPOSIT = {
    "type": "object",
    "required": ["reference", "currency", "amount", "day", "counterparty", "text"],
    "properties": {
        "reference": _STR,
        "currency": _STR,
        "amount": _NUM,
        "day": _DAY,
        "counterparty": _STR,
        "text": _STR,
    },
}
_CONTROLS = {
    "type": "object",
    "required": ["payouts", "deposits"],
    "properties": {
        "payouts": {"type": "array", "items": _CONTROL},
        "deposits": {"type": "array", "items": _DEPOSIT},
    },
}


def _as_of(db: Database) -> tuple[list[Payout], date]:
    """Every payout and the sandbox's today (UTC), open payments past their expiry failed first."""
    with db.write() as conn:
        now = store.now_ms(conn)
        store.expire_orders(conn, now=now)
    return payouts(store.list_orders(db.conn)), utc_day(now)


def _once(request: Request, *names: str) -> None:
    for name in names:
        if len(request.query_params.getlist(name)) > 1:  # FastAPI would silently keep the last one
            raise BadRequest(name, "given more than once")


@router.get(
    "/payouts",
    summary="The payouts of the successful payments, paid and pending, as of the sandbox clock",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["today", "payouts"],
            "properties": {"today": _DAY, "payouts": {"type": "array", "items": _PAYOUT}},
        },
        errors=(),
    ),
)
async def list_payouts(db: DbDep) -> Response:
    found, today = _as_of(db)
    return ok({"today": today.isoformat(), "payouts": [payout_record(p, today) for p in found]})


@router.get(
    "/payouts/report",
    summary="The paid payouts itemized, as Stripe's payout reconciliation report (CSV)",
    openapi_extra=operation(
        data={"type": "object"}, errors=(), extra_200={"text/csv": {"schema": {"type": "string"}}}
    ),
)
async def payout_report(db: DbDep) -> Response:
    found, today = _as_of(db)
    paid = [p for p in found if p.status(today) == "paid"]
    return Response(report_csv(paid), media_type="text/csv; charset=utf-8")


@router.get(
    "/bank/statement",
    summary="One day's camt.053 statement of the sandbox's account in a currency",
    openapi_extra=operation(
        data={"type": "object"},
        errors=(400, 409),
        extra_200={"application/xml": {"schema": {"type": "string"}}},
    ),
)
async def bank_statement(
    request: Request,
    db: DbDep,
    currency: Annotated[str, Query(json_schema_extra={"enum": list(CHARGEABLE)})],
    day: Annotated[str, Query(pattern=_DAY_PATTERN, json_schema_extra={"format": "date"})],
) -> Response:
    """Each day's closing balance is the next day's opening; no statement of a day still to come."""
    _once(request, "currency", "day")
    if currency not in CHARGEABLE:
        raise BadRequest("currency", f"{currency!r} is no currency a payment method charges")
    wanted = _date(day)
    found, today = _as_of(db)
    if wanted > today:
        raise Conflict("day", f"{wanted} is after the sandbox's today ({today}): no statement yet")
    booked = bank.lines(found, _controls(db.conn), _deposits(db.conn))
    body = bank.statement(booked, currency=currency, day=wanted)
    return Response(body, media_type="application/xml")


@router.get(
    "/bank/controls",
    summary="What the bank does to payouts (lost, delayed, changed) and the deposits it books",
    openapi_extra=operation(data=_CONTROLS, errors=()),
)
async def list_bank_controls(db: DbDep) -> Response:
    return ok(_controls_view(db.conn))


@router.delete(
    "/bank/controls",
    summary="Remove every bank control and deposit: each payout arrives as paid out",
    openapi_extra=operation(
        data={"type": "object", "required": ["cleared"], "properties": {"cleared": _INT}}, errors=()
    ),
)
async def clear_bank_controls(db: DbDep) -> Response:
    with db.write() as conn:
        cleared = store.clear_bank_controls(conn)
    return ok({"cleared": cleared})


@router.post(
    "/bank/payouts/{payoutId}/lose",
    summary="The bank loses the payout: it never appears in a statement",
    openapi_extra=operation(data=_CONTROL, errors=(404,)),
)
async def lose_payout(payoutId: str, db: DbDep) -> Response:
    _payout(db, payoutId)
    return ok(_control_changed(db, payoutId, lost=True))


@router.post(
    "/bank/payouts/{payoutId}/delay",
    summary="The bank books the payout some business days after its payout day",
    openapi_extra=operation(data=_CONTROL, body=BankDelayRequest, errors=(400, 404, 413)),
)
async def delay_payout(payoutId: str, request: Request, db: DbDep) -> Response:
    req = build(BankDelayRequest, await read_object(request))
    _payout(db, payoutId)
    return ok(_control_changed(db, payoutId, delay_days=req.days))


@router.post(
    "/bank/payouts/{payoutId}/change",
    summary="The bank books the payout for another amount",
    openapi_extra=operation(data=_CONTROL, body=BankChangeRequest, errors=(400, 404, 409, 413)),
)
async def change_payout(payoutId: str, request: Request, db: DbDep) -> Response:
    req = build(BankChangeRequest, await read_object(request))
    payout = _payout(db, payoutId)
    if not fits_currency(req.amount, payout.currency):
        raise Conflict("amount", f"more decimals than the payout's currency {payout.currency} has")
    return ok(_control_changed(db, payoutId, amount_minor=to_minor(req.amount, payout.currency)))


@router.post(
    "/bank/deposits",
    summary="The bank books a credit from the processor that no payout explains",
    openapi_extra=operation(data=_DEPOSIT, body=BankDepositRequest, errors=(400, 413)),
)
async def add_deposit(request: Request, db: DbDep) -> Response:
    req = build(BankDepositRequest, await read_object(request))
    if req.currency not in CHARGEABLE:
        raise BadRequest("currency", f"{req.currency!r}: the sandbox's bank has no account in it")
    with db.write() as conn:
        now = store.now_ms(conn)
        number = store.insert_deposit(
            conn,
            currency=req.currency,
            amount_minor=to_minor(req.amount, req.currency),
            day=(req.booking_day or utc_day(now)).isoformat(),
            counterparty=req.counterparty or PROCESSOR_NAME,
            text=req.text or f"{PROCESSOR_NAME} TRANSFER",
            now=now,
        )
    (deposit,) = [d for d in _deposits(db.conn) if d.number == number]
    return ok(_deposit_record(deposit))


def _date(day: str) -> date:
    try:
        return date.fromisoformat(day)
    except ValueError:
        raise BadRequest("day", f"{day!r} is not a date (YYYY-MM-DD)") from None


def _payout(db: Database, payout_id: str) -> Payout:
    found, _ = _as_of(db)
    for payout in found:
        if payout.id == payout_id:
            return payout
    raise NotFound(f"payoutId: unknown payout {payout_id!r} (GET /sandbox/payouts lists them)")


def _control_changed(
    db: Database,
    payout_id: str,
    *,
    lost: bool | None = None,
    delay_days: int | None = None,
    amount_minor: int | None = None,
) -> dict[str, object]:
    with db.write() as conn:
        store.set_payout_control(
            conn,
            payout_id=payout_id,
            now=store.now_ms(conn),
            lost=lost,
            delay_days=delay_days,
            amount_minor=amount_minor,
        )
    return _control_record(_controls(db.conn)[payout_id])


def _controls(conn: sqlite3.Connection) -> dict[str, bank.PayoutControl]:
    return {
        str(row["payout_id"]): bank.PayoutControl(
            payout_id=str(row["payout_id"]),
            lost=bool(row["lost"]),
            delay_days=int(row["delay_days"]),
            amount_minor=None if row["amount_minor"] is None else int(row["amount_minor"]),
        )
        for row in store.list_payout_controls(conn)
    }


def _deposits(conn: sqlite3.Connection) -> list[bank.Deposit]:
    return [
        bank.Deposit(
            number=int(row["seq"]),
            currency=str(row["currency"]),
            amount_minor=int(row["amount_minor"]),
            day=date.fromisoformat(str(row["day"])),
            counterparty=str(row["counterparty"]),
            text=str(row["text"]),
        )
        for row in store.list_deposits(conn)
    ]


def _control_record(control: bank.PayoutControl) -> dict[str, object]:
    currency = control.payout_id.rsplit("_", 1)[-1]
    amount = None if control.amount_minor is None else from_minor(control.amount_minor, currency)
    return {
        "payoutId": control.payout_id,
        "lost": control.lost,
        "delayDays": control.delay_days,
        "amount": amount,
    }


def _deposit_record(deposit: bank.Deposit) -> dict[str, object]:
    return {
        "reference": deposit.reference,
        "currency": deposit.currency,
        "amount": from_minor(deposit.amount_minor, deposit.currency),
        "day": deposit.day.isoformat(),
        "counterparty": deposit.counterparty,
        "text": deposit.text,
    }


def _controls_view(conn: sqlite3.Connection) -> dict[str, object]:
    return {
        "payouts": [_control_record(c) for c in _controls(conn).values()],
        "deposits": [_deposit_record(d) for d in _deposits(conn)],
    }
