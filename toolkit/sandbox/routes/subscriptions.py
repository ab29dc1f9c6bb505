"""GET /subscription/{id}: the Subscription computed from its state at the sandbox time."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from toolkit.models import Subscription
from toolkit.sandbox import store
from toolkit.sandbox.billing import Plan, render_subscription, subscription_position
from toolkit.sandbox.deps import authenticate
from toolkit.sandbox.http import NotFound, ok_body, ok_bytes
from toolkit.sandbox.openapi import model_ref, operation

#: No router-level auth dependency: the route authenticates itself (see ``deps.authenticate``).
router = APIRouter(tags=["subscriptions"])


@router.get(
    "/subscription/{id}",
    summary="Read one subscription",
    openapi_extra=operation(data=model_ref(Subscription), errors=(400, 404)),
)
async def get_subscription(id: str, request: Request) -> Response:
    # (A comment, not a docstring: FastAPI would publish a docstring in the OpenAPI document.)
    # Served from the read cache while nothing is committed: one ``PRAGMA data_version`` query.
    # The subscription's rows are read once into a ``Plan``; its encoded response is reused while
    # the subscription stays in the same cycle (the only way the clock changes the view).
    db = authenticate(request).db
    cache = db.read_cache()
    key = ("subscription", id)
    plan: Plan | None = cache.get(key)
    if plan is None:
        row = store.get_subscription(db.reader, subscription_id=id)
        if row is None:
            raise NotFound(f"id: unknown subscription {id!r}")
        plan = cache[key] = Plan(db.reader, row)
    position = subscription_position(plan, now=store.cached_now_ms(db, cache))
    body = plan.bodies.get(position)
    if body is None:
        cycle, ended = position
        body = plan.bodies[position] = ok_body(render_subscription(plan, cycle=cycle, ended=ended))
    return ok_bytes(body)
