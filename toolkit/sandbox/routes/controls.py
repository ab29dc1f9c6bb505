"""Sandbox-only controls under /sandbox/ (same auth): subscriptions, clock, payments, export, reset."""

from __future__ import annotations

import csv
import io
import sqlite3
from collections.abc import Callable
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import Response

from toolkit.control_models import (
    CancelRequest,
    ClockAdvanceRequest,
    ResolveRequest,
    SubscriptionCreateRequest,
)
from toolkit.models import EXPORT_COLUMNS, Subscription
from toolkit.outputs import neutralise_cell
from toolkit.sandbox import billing, rules, store
from toolkit.sandbox.billing import subscription_view
from toolkit.sandbox.charging import export_record
from toolkit.sandbox.db import Database
from toolkit.sandbox.deps import Authenticated, DbDep
from toolkit.sandbox.http import BadRequest, Conflict, NotFound, build, ok, read_object
from toolkit.sandbox.openapi import model_ref, operation

router = APIRouter(prefix="/sandbox", tags=["sandbox controls"], dependencies=[Authenticated])

_STR = {"type": "string"}
_INT = {"type": "integer"}
_NUM = {"type": "number"}
_NULLABLE_STR = {"type": ["string", "null"]}
_EXPORT_RECORD = {
    "type": "object",
    "required": list(EXPORT_COLUMNS),
    "properties": {
        "orderId": _STR,
        "merchantReferenceId": _NULLABLE_STR,
        "customerId": _STR,
        "paymentMethodType": _STR,
        "paymentInstrumentId": _STR,
        "amount": _NUM,
        "currency": _STR,
        "pricingAmount": _NUM,
        "pricingCurrency": _STR,
        "status": {"type": "string", "enum": list(rules.STATUS_NAMES.values())},
        "createTime": _INT,
        "updateTime": _INT,
    },
}


@router.get(
    "/info",
    summary="Prove this is a sandbox",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["sandbox", "now", "clockFrozen", "database"],
            "properties": {
                "sandbox": {"type": "boolean"},
                "now": _INT,
                "clockFrozen": {"type": "boolean"},
                "database": _STR,
            },
        },
        errors=(),
    ),
)
async def info(db: DbDep) -> Response:
    conn = db.conn
    frozen = store.clock_frozen_ms(conn) is not None
    return ok({"sandbox": True, "now": store.now_ms(conn), "clockFrozen": frozen, "database": db.path.name})


@router.post(
    "/subscriptions",
    summary="Create a subscription on a recurring price",
    openapi_extra=operation(
        data=model_ref(Subscription), body=SubscriptionCreateRequest, errors=(400, 404, 409, 413)
    ),
)
async def create_subscription(request: Request, db: DbDep) -> Response:
    req = build(SubscriptionCreateRequest, await read_object(request))
    with db.write() as conn:
        data = billing.create_subscription(conn, req, now=store.now_ms(conn))
    return ok(data)


@router.post(
    "/subscriptions/{id}/cancel",
    summary="Cancel a subscription now or at the end of the current period",
    openapi_extra=operation(
        data=model_ref(Subscription), body=CancelRequest, body_required=False, errors=(400, 404, 409, 413)
    ),
)
async def cancel_subscription(id: str, request: Request, db: DbDep) -> Response:
    req = build(CancelRequest, await read_object(request, required=False))
    with db.write() as conn:
        now = store.now_ms(conn)
        row = store.get_subscription(conn, subscription_id=id)
        if row is None:
            raise NotFound(f"id: unknown subscription {id!r}")
        view = subscription_view(conn, row, now=now)
        if view["status"] == "canceled":
            raise Conflict("id", "the subscription is already canceled")
        cancel_at = int(view["currentPeriodEnd"]) if req.atPeriodEnd else now
        store.cancel_subscription(
            conn,
            subscription_id=id,
            cancel_at=cancel_at,
            at_period_end=req.atPeriodEnd,
            reason=req.reason,
            now=now,
        )
        row = store.get_subscription(conn, subscription_id=id)
        assert row is not None
        data = subscription_view(conn, row, now=now)
    return ok(data)


@router.post(
    "/clock/advance",
    summary="Move the sandbox clock forward",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["now", "expiredPayments"],
            "properties": {"now": _INT, "expiredPayments": _INT},
        },
        body=ClockAdvanceRequest,
        errors=(400, 409, 413),
    ),
)
async def advance_clock(request: Request, db: DbDep) -> Response:
    """Subscriptions renew on their next read; open payments past their expiry fail now."""
    req = build(ClockAdvanceRequest, await read_object(request))
    with db.write() as conn:
        if store.now_ms(conn) + req.total_ms > rules.CLOCK_HORIZON_MS:
            raise Conflict("body", "the sandbox clock does not move past 9000-01-01")
        store.advance_clock(conn, delta_ms=req.total_ms)
        now = store.now_ms(conn)
        expired = store.expire_orders(conn, now=now)
    return ok({"now": now, "expiredPayments": expired})


_CLOCK_STATE = {
    "type": "object",
    "required": ["now", "clockFrozen"],
    "properties": {"now": _INT, "clockFrozen": {"type": "boolean"}},
}


@router.post(
    "/clock/freeze",
    summary="Stop the sandbox clock where it stands",
    openapi_extra=operation(data=_CLOCK_STATE, errors=()),
)
async def freeze_clock(db: DbDep) -> Response:
    """Nothing expires and no period renews by itself; ``advance`` still moves a frozen clock."""
    return _clock_changed(db, store.freeze_clock, frozen=True)


@router.post(
    "/clock/resume",
    summary="Let a frozen sandbox clock run again from its instant",
    openapi_extra=operation(data=_CLOCK_STATE, errors=()),
)
async def resume_clock(db: DbDep) -> Response:
    return _clock_changed(db, store.resume_clock, frozen=False)


def _clock_changed(db: Database, change: Callable[[sqlite3.Connection], None], *, frozen: bool) -> Response:
    with db.write() as conn:
        change(conn)
        now = store.now_ms(conn)
    return ok({"now": now, "clockFrozen": frozen})


@router.post(
    "/payments/{orderId}/resolve",
    summary="Settle a pending or next-action payment",
    openapi_extra=operation(data=_EXPORT_RECORD, body=ResolveRequest, errors=(400, 404, 409, 413)),
)
async def resolve_payment(orderId: str, request: Request, db: DbDep) -> Response:
    req = build(ResolveRequest, await read_object(request))
    with db.write() as conn:
        now = store.now_ms(conn)
        store.expire_orders(conn, now=now)
        row = store.get_order(conn, order_id=orderId)
        if row is None:
            raise NotFound(f"orderId: unknown order {orderId!r}")
        if int(row["status"]) not in (rules.PENDING, rules.NEXT_ACTION):
            reason = " (expired)" if row["failure_reason"] == "expired" else ""
            raise Conflict(
                "orderId", f"the payment is already {rules.STATUS_NAMES[int(row['status'])]}{reason}"
            )
        status = rules.SUCCESS if req.status == "success" else rules.FAILURE
        store.set_order_status(
            conn,
            order_id=orderId,
            status=status,
            reason=None if status == rules.SUCCESS else "resolved",
            now=now,
        )
        row = store.get_order(conn, order_id=orderId)
        assert row is not None
    return ok(export_record(row))


@router.get(
    "/payments",
    summary="Settlement export of every payment, as JSON or CSV",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["payments"],
            "properties": {"payments": {"type": "array", "items": _EXPORT_RECORD}},
        },
        errors=(400,),
        extra_200={"text/csv": {"schema": {"type": "string"}}},
    ),
)
async def export_payments(
    request: Request,
    db: DbDep,
    format: Literal["json", "csv"] = "json",
    merchantReferenceId: str | None = None,
) -> Response:
    for name in ("format", "merchantReferenceId"):
        if len(request.query_params.getlist(name)) > 1:  # FastAPI would silently keep the last one
            raise BadRequest(name, "given more than once")
    with db.write() as conn:
        store.expire_orders(conn, now=store.now_ms(conn))
    rows = store.list_orders(db.conn, merchant_reference_id=merchantReferenceId)
    records = [export_record(row) for row in rows]
    if format == "json":
        return ok({"payments": records})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in records:  # the first column begins the row (``toolkit.outputs``)
        writer.writerow(
            {
                k: "" if v is None else neutralise_cell(str(v), row_start=k == EXPORT_COLUMNS[0])
                for k, v in record.items()
            }
        )
    return Response(buffer.getvalue(), media_type="text/csv; charset=utf-8")


@router.post(
    "/prices/{priceId}/deactivate",
    summary="Make a price inactive (to script the inactive-price rule)",
    openapi_extra=operation(data={"type": "object"}, errors=(404,)),
)
async def deactivate_price(priceId: str, db: DbDep) -> Response:
    with db.write() as conn:
        if store.get_price(conn, price_id=priceId) is None:
            raise NotFound(f"priceId: unknown price {priceId!r}")
        store.deactivate_price(conn, price_id=priceId)
    return ok({"priceId": priceId, "active": False})


@router.post(
    "/reset",
    summary="Empty the store (the API key is kept)",
    openapi_extra=operation(data={"type": "object"}, errors=()),
)
async def reset(db: DbDep) -> Response:
    with db.write() as conn:
        store.reset(conn)
    return ok({})
