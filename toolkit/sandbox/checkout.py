"""Where a wallet payment's customer pays: the checkout URL, what its QR code holds, and the path
its QR images are served under (``routes/images.py``). Shared by the payment's rules, which name
them in its next action, and the image routes, which draw them.
"""

from __future__ import annotations

from toolkit.sandbox import rules
from toolkit.sandbox.qr import QrFamily

#: The images of a wallet payment are ``{QR_PATH}/{orderId}.png`` and ``.svg``.
QR_PATH = "/sandbox/qr"

#: Every wallet QR code holds the checkout URL ``{CHECKOUT_BASE}/pay/ord_<32 hex>`` (``store.new_id``):
#: one family, drawn from one template.
CHECKOUT_QR = QrFamily(prefix=f"{rules.CHECKOUT_BASE}/pay/ord_", tail_length=32)


def checkout_url(order_id: str) -> str:
    """Where the customer pays: the ``redirectUrl`` of a wallet action, and what its QR code holds."""
    return f"{rules.CHECKOUT_BASE}/pay/{order_id}"
