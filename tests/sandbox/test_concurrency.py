"""200 concurrent POST /payment: 200 distinct orderIds, all in the export."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.sandbox.conftest import Api, now_ms
from toolkit.models import to_json_bytes


@pytest.mark.slow
async def test_200_concurrent_payments(api: Api) -> None:
    key = api.sandbox.api_key.get_secret_value()
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(base_url=api.sandbox.base_url, limits=limits, timeout=60) as client:

        async def pay(index: int) -> str:
            body = {
                "referenceCustomerId": f"cust-{index % 7}",
                "paymentMethodType": "CARD",
                "paymentInstrumentId": "pi_test_default",
                "amount": index + 1,
                "currency": "USD",
                "merchantReferenceId": f"conc-{index}",
                "returnUrl": "https://r",
            }
            response = await client.post(
                "/payment",
                content=to_json_bytes(body),
                headers={"X-API-KEY": key, "X-Timestamp": str(now_ms()), "Content-Type": "application/json"},
            )
            assert response.status_code == 200, response.text
            return str(response.json()["data"]["orderId"])

        ids = await asyncio.gather(*(pay(i) for i in range(200)))
    assert len(set(ids)) == 200
    payments = api.ok("GET", "/sandbox/payments")["payments"]
    assert {p["orderId"] for p in payments} == set(ids)
    assert len({p["customerId"] for p in payments}) == 7
    assert sorted(p["merchantReferenceId"] for p in payments) == sorted(f"conc-{i}" for i in range(200))
