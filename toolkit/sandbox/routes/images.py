"""The QR images of wallet payments, at the URLs their next action names (``imageUrlPng``, ``imageUrlSvg``).

Public, like a real provider's image URLs: a customer's browser or an ``<img>`` tag cannot send
X-API-KEY, and the order id in the URL is a uuid4 (122 random bits), so it is unguessable. Each
image is built once (the PNG usually by the payment itself, for its ``imageDataUrl``; the SVG on
its first request) and cached; its bytes never change, so clients may cache it too.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from toolkit.sandbox import rules, store
from toolkit.sandbox.checkout import CHECKOUT_QR, QR_PATH, checkout_url
from toolkit.sandbox.db import Database
from toolkit.sandbox.deps import DbDep
from toolkit.sandbox.http import NotFound

_WALLET_METHODS = frozenset(method.value for method in rules.WALLETS)
_CACHE_CONTROL = {"Cache-Control": "public, max-age=86400, immutable"}

router = APIRouter(prefix=QR_PATH, tags=["sandbox QR images"])


def _operation(media_type: str) -> dict[str, Any]:
    return {
        "security": [],
        "responses": {
            "200": {
                "description": "The QR image.",
                "content": {media_type: {"schema": {"type": "string", "format": "binary"}}},
            },
            "404": {
                "description": "No wallet payment has this order id.",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["code", "msg", "data"],
                            "properties": {
                                "code": {"type": "integer"},
                                "msg": {"type": "string"},
                                "data": {"type": "null"},
                            },
                        }
                    }
                },
            },
        },
    }


def _wallet_checkout_url(db: Database, order_id: str) -> str:
    """What the QR code of a wallet payment holds; 404 when no wallet payment has this id."""
    row = store.get_order(db.conn, order_id=order_id)
    if row is None or row["method"] not in _WALLET_METHODS:
        raise NotFound(f"orderId: no wallet payment {order_id!r}")
    return checkout_url(order_id)


@router.get(
    "/{orderId}.png",
    summary="QR code of a wallet payment (PNG)",
    response_class=Response,
    openapi_extra=_operation("image/png"),
)
async def qr_png(orderId: str, db: DbDep) -> Response:
    image = CHECKOUT_QR.png(_wallet_checkout_url(db, orderId))
    return Response(image, media_type="image/png", headers=_CACHE_CONTROL)


@router.get(
    "/{orderId}.svg",
    summary="QR code of a wallet payment (SVG)",
    response_class=Response,
    openapi_extra=_operation("image/svg+xml"),
)
async def qr_svg(orderId: str, db: DbDep) -> Response:
    image = CHECKOUT_QR.svg(_wallet_checkout_url(db, orderId))
    return Response(image, media_type="image/svg+xml", headers=_CACHE_CONTROL)
