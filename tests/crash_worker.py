"""Run by tests/test_crash.py in its own process: bulk-create N payments, killed mid-batch by the test."""

from __future__ import annotations

import sys

import toolkit

count = int(sys.argv[1])
rows = [
    {
        "merchantReferenceId": f"crash-{i:04d}",
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "returnUrl": "https://shop/r",
        "customerEmail": f"c{i}@example.com",
        "amount": f"{i + 1}.25",
        "currency": "USD",
    }
    for i in range(count)
]
result = toolkit.create_payments(rows, progress=False, concurrency=8)
print(f"sent={result.sent} reused={result.reused} errors={len(result.errors)}")
