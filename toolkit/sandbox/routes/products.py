"""POST /product: a thin route; the rules of a product and its prices live in ``pricing.py``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from toolkit.models import Product, ProductRequest
from toolkit.sandbox import pricing, store
from toolkit.sandbox.deps import Authenticated, DbDep
from toolkit.sandbox.http import build, ok, read_object
from toolkit.sandbox.openapi import model_ref, operation

router = APIRouter(tags=["products"], dependencies=[Authenticated])


@router.post(
    "/product",
    summary="Create a product with prices",
    openapi_extra=operation(data=model_ref(Product), body=ProductRequest, errors=(400, 413)),
)
async def create_product(request: Request, db: DbDep) -> Response:
    req = build(ProductRequest, await read_object(request))
    pricing.check_product(req)
    with db.write() as conn:
        data = pricing.create_product(conn, req, now=store.now_ms(conn))
    return ok(data)
