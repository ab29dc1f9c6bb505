"""POST /payment: a thin route; the rules of a payment live in ``charging.py``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from toolkit.models import PaymentRequest, PaymentResult
from toolkit.sandbox import charging, store
from toolkit.sandbox.deps import authenticate
from toolkit.sandbox.http import build, image_base, ok, read_object
from toolkit.sandbox.openapi import model_ref, operation
from toolkit.sandbox.requests_log import note_reference

#: No router-level auth dependency: the route authenticates itself (see ``deps.authenticate``).
router = APIRouter(tags=["payments"])


@router.post(
    "/payment",
    summary="Create a one-time payment",
    openapi_extra=operation(data=model_ref(PaymentResult), body=PaymentRequest, errors=(400, 404, 409, 413)),
)
async def create_payment(request: Request) -> Response:
    # (A comment, not a docstring: FastAPI would publish a docstring in the OpenAPI document.)
    # Decided and written with the payments of its turn of the event loop (``Database.write_soon``),
    # answered once committed; the next action is built after.
    db = authenticate(request).db
    body = await read_object(request)
    note_reference(request.scope, body.get("merchantReferenceId"))  # for the request log
    req = build(PaymentRequest, body)
    created = await db.write_soon(lambda conn: charging.create_payment(conn, req, now=store.now_ms(conn)))
    return ok(created.answer(images=image_base(request)))
