"""GET /subscription/{id}: the Subscription computed from its state at the sandbox time."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from toolkit.models import Subscription
from toolkit.sandbox import store
from toolkit.sandbox.billing import subscription_view
from toolkit.sandbox.deps import Authenticated, DbDep
from toolkit.sandbox.http import NotFound, ok
from toolkit.sandbox.openapi import model_ref, operation

router = APIRouter(tags=["subscriptions"], dependencies=[Authenticated])


@router.get(
    "/subscription/{id}",
    summary="Read one subscription",
    openapi_extra=operation(data=model_ref(Subscription), errors=(400, 404)),
)
async def get_subscription(id: str, db: DbDep) -> Response:
    conn = db.conn
    row = store.get_subscription(conn, subscription_id=id)
    if row is None:
        raise NotFound(f"id: unknown subscription {id!r}")
    return ok(subscription_view(conn, row, now=store.now_ms(conn)))
