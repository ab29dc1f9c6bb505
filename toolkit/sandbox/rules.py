"""The sandbox's documented choices where the spec says "not shown": outcomes, currencies, FX, time.

Pure functions and tables, no I/O, so every rule is tested without a server and documented in
docs/sandbox.md from the same names.
"""

from __future__ import annotations

import calendar
import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext

from toolkit.models import PAYMENT_STATUS_LABELS, PaymentStatus
from toolkit.models import PaymentMethodType as M
from toolkit.money import MAX_REQUEST_AMOUNT, round_to_currency

SUCCESS, PENDING, FAILURE, NEXT_ACTION = (
    PaymentStatus.SUCCESS.value,
    PaymentStatus.PENDING.value,
    PaymentStatus.FAILURE.value,
    PaymentStatus.NEXT_ACTION.value,
)
STATUS_NAMES: dict[int, str] = PAYMENT_STATUS_LABELS

#: Test amounts: amount in minor units modulo 1000 -> status, for any method.
TEST_AMOUNT_OUTCOMES: dict[int, int] = {901: SUCCESS, 902: PENDING, 903: FAILURE, 905: NEXT_ACTION}

#: How long an open payment waits before it expires to failure (reason ``expired``).
NEXT_ACTION_TTL_MS = 15 * 60 * 1000
PENDING_TTL_MS = 24 * 60 * 60 * 1000

_CARD_CURRENCIES = (
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "KRW",
    "KWD",
    "CNY",
    "SGD",
    "HKD",
    "AUD",
    "CAD",
    "BRL",
    "INR",
    "IDR",
    "THB",
    "PHP",
    "MYR",
)

#: Payment method -> currencies it can be charged in (spec rule 2: the method must support it).
METHOD_CURRENCIES: dict[M, tuple[str, ...]] = {
    M.CARD: _CARD_CURRENCIES,
    M.ALIPAY: ("CNY", "USD", "HKD", "EUR", "GBP", "JPY", "SGD"),
    M.WECHAT: ("CNY", "HKD", "USD"),
    M.GCASH: ("PHP",),
    M.TNG: ("MYR",),
    M.KAKAO: ("KRW",),
    M.PIX: ("BRL",),
    M.PROMPTPAY: ("THB",),
    M.QRIS: ("IDR",),
    M.UPI: ("INR",),
    M.CASHAPP: ("USD",),
}

#: Units of the currency per 1 USD, exact. Conversion goes through USD and rounds once, half-even.
FX_PER_USD: dict[str, Decimal] = {
    "USD": Decimal("1"),
    "EUR": Decimal("0.92"),
    "GBP": Decimal("0.79"),
    "JPY": Decimal("150"),
    "KRW": Decimal("1350"),
    "KWD": Decimal("0.307"),
    "CNY": Decimal("7.2"),
    "SGD": Decimal("1.35"),
    "HKD": Decimal("7.8"),
    "AUD": Decimal("1.5"),
    "CAD": Decimal("1.36"),
    "BRL": Decimal("5"),
    "INR": Decimal("83"),
    "IDR": Decimal("15600"),
    "THB": Decimal("36"),
    "PHP": Decimal("56"),
    "MYR": Decimal("4.7"),
    "CHF": Decimal("0.88"),
    "NZD": Decimal("1.65"),
}


class MagnitudeError(ValueError):
    """An amount too large for the sandbox."""

    def __init__(self, field: str) -> None:
        self.field = field
        super().__init__(f"must be less than {MAX_REQUEST_AMOUNT:,}")


def check_magnitude(amount: Decimal, field: str) -> None:
    """Raise ``MagnitudeError`` for amounts of ``MAX_REQUEST_AMOUNT`` major units or more."""
    if amount >= MAX_REQUEST_AMOUNT:
        raise MagnitudeError(field)


class FxError(ValueError):
    """No rate for a currency, or the converted amount rounds to zero."""


def convert(amount: Decimal, source: str, target: str) -> Decimal:
    """``amount`` in ``source`` -> ``target`` via the FX table, rounded half-even to minor units."""
    if source == target:
        return amount
    for currency in (source, target):
        if currency not in FX_PER_USD:
            raise FxError(f"no sandbox FX rate for {currency} (rates exist for {', '.join(FX_PER_USD)})")
    with localcontext() as ctx:
        ctx.prec = 50
        exact = amount * FX_PER_USD[target] / FX_PER_USD[source]
    result = round_to_currency(exact, target)
    if result <= 0:
        raise FxError(f"{amount} {source} converts to {result} {target}, which is not positive")
    return result


# ---------------------------------------------------------------------------------------------
# outcomes


def amount_outcome(minor: int) -> int | None:
    """The status forced by a test amount (minor units mod 1000 in 901/902/903/905), else None."""
    return TEST_AMOUNT_OUTCOMES.get(minor % 1000)


def default_outcome(method: M) -> int:
    """What a method does with no test instrument and no test amount."""
    if method is M.CARD:
        return SUCCESS
    if method is M.UPI:
        return PENDING
    return NEXT_ACTION


def decide_outcome(
    *, method: M, instrument_outcome: int | None, pricing_minor: int, charged_minor: int
) -> int:
    """Precedence: test instrument, then test amount (pricing amount, then charged), then method."""
    if instrument_outcome is not None:
        return instrument_outcome
    for minor in (pricing_minor, charged_minor):
        forced = amount_outcome(minor)
        if forced is not None:
            return forced
    return default_outcome(method)


@dataclass(frozen=True)
class WalletApp:
    """Deeplink scheme and Android package of an app wallet (package None: bank QR standards)."""

    scheme: str
    package: str | None


WALLETS: dict[M, WalletApp] = {
    M.ALIPAY: WalletApp("alipays", "com.eg.android.AlipayGphone"),
    M.WECHAT: WalletApp("weixin", "com.tencent.mm"),
    M.GCASH: WalletApp("gcash", "com.globe.gcash.android"),
    M.TNG: WalletApp("tngdwallet", "my.com.tngdigital.ewallet"),
    M.KAKAO: WalletApp("kakaotalk", "com.kakao.talk"),
    M.CASHAPP: WalletApp("cashme", "com.squareup.cash"),
    M.QRIS: WalletApp("https", None),
    M.PROMPTPAY: WalletApp("https", None),
    M.PIX: WalletApp("https", None),
    M.UPI: WalletApp("upi", None),
}

#: Hosted pages of the sandbox are placeholders on the reserved ``.invalid`` domain: resolve a
#: payment with POST /sandbox/payments/{orderId}/resolve instead of opening them.
CHECKOUT_BASE = "https://checkout.sandbox.invalid"
ACS_BASE = "https://3ds.sandbox.invalid"


# ---------------------------------------------------------------------------------------------
# time: billing periods

DAY_MS = 86_400_000
_MONTHS = {"month": 1, "quarter": 3, "year": 12}
_DAYS = {"day": 1, "week": 7}

#: The longest billing period the sandbox takes (intervalCount per interval): 100 years.
MAX_INTERVAL_COUNT: dict[str, int] = {
    "day": 36_500,
    "week": 5_200,
    "month": 1_200,
    "quarter": 400,
    "year": 100,
}
#: The sandbox clock does not move past this instant (9000-01-01), so that every period, trial and
#: renewal computed from it stays within the calendar's year 9999.
CLOCK_HORIZON_MS = int(datetime(9000, 1, 1, tzinfo=UTC).timestamp()) * 1000


def _add_months(start: datetime, months: int) -> datetime:
    total = start.month - 1 + months
    year, month = start.year + total // 12, total % 12 + 1
    day = min(start.day, calendar.monthrange(year, month)[1])
    return start.replace(year=year, month=month, day=day)


@functools.lru_cache(maxsize=4096)
def period_start(anchor_ms: int, interval: str, count: int, index: int) -> int:
    """Start of billing period ``index`` (0-based) counted from ``anchor_ms``, in ms.

    Memoised (a pure function of its arguments): every read of a subscription asks for the same
    few period starts, and the calendar arithmetic is most of a read's own work.

    Calendar intervals are computed from the anchor each time (day clamped to the month's
    length), so a subscription started on the 31st bills on the 30th in April and the 31st in May.
    """
    if interval in _DAYS:
        return anchor_ms + index * count * _DAYS[interval] * DAY_MS
    anchor = datetime.fromtimestamp(anchor_ms // 1000, tz=UTC) + timedelta(milliseconds=anchor_ms % 1000)
    moved = _add_months(anchor, index * count * _MONTHS[interval])
    return int(moved.timestamp()) * 1000 + moved.microsecond // 1000


def period_index(anchor_ms: int, interval: str, count: int, at_ms: int) -> int:
    """The index n of the period holding ``at_ms`` (start(n) <= at < start(n+1)); 0 before anchor."""
    if at_ms < anchor_ms:
        return 0
    if interval in _DAYS:
        return (at_ms - anchor_ms) // (count * _DAYS[interval] * DAY_MS)
    guess = max(0, (at_ms - anchor_ms) // (count * _MONTHS[interval] * 31 * DAY_MS))
    while period_start(anchor_ms, interval, count, guess + 1) <= at_ms:
        guess += 1
    return int(guess)
