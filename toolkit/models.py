"""Pydantic models of every resource in ``api-spec.md``, with the spec's own field names.

Shared by the client and the sandbox. Requests are strict: unknown fields are refused and every
rule of the spec is checked before anything is sent, with a message naming the field. Responses
are tolerant: unknown fields are kept (the real service may send more than the spec shows) and
missing optional fields are None. Amounts are ``Decimal``; JSON is parsed with
``parse_json`` so that numbers never pass through float.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, Self, TypeVar

import simplejson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from toolkit.errors import MoneyError, RequestValidationError
from toolkit.money import MAX_REQUEST_AMOUNT, check_amount_range, check_currency, fits_currency, minor_digits
from toolkit.payment_status import PAYMENT_STATUS_LABELS as PAYMENT_STATUS_LABELS
from toolkit.payment_status import PAYMENT_STATUS_NAMES as PAYMENT_STATUS_NAMES
from toolkit.payment_status import PaymentStatus as PaymentStatus


class PaymentMethodType(StrEnum):
    """The payment methods of the spec, as it spells them."""

    ALIPAY = "ALIPAY"
    CARD = "CARD"
    CASHAPP = "CASHAPP"
    GCASH = "GCASH"
    KAKAO = "KAKAO"
    PIX = "PIX"
    PROMPTPAY = "PROMPTPAY"
    QRIS = "QRIS"
    TNG = "TNG"
    UPI = "UPI"
    WECHAT = "WECHAT"


#: Methods for which the service creates a payment instrument when none is given (spec rule 3).
AUTO_INSTRUMENT_METHODS: frozenset[PaymentMethodType] = frozenset(
    {
        PaymentMethodType.CASHAPP,
        PaymentMethodType.GCASH,
        PaymentMethodType.TNG,
        PaymentMethodType.WECHAT,
        PaymentMethodType.KAKAO,
        PaymentMethodType.ALIPAY,
        PaymentMethodType.QRIS,
        PaymentMethodType.PROMPTPAY,
    }
)


class PlatformType(StrEnum):
    """Where the payer is (the spec's ``platformType``)."""

    WEB = "WEB"
    WAP = "WAP"


class DeviceType(StrEnum):
    """The payer's device (the spec's ``deviceType``)."""

    ANDROID = "Android"
    IOS = "iOS"


class TaxCategory(StrEnum):
    """The tax categories a product may declare."""

    DIGITAL_GOODS_OR_SERVICE = "digital_goods_or_service"
    EBOOK = "ebook"
    SOFTWARE_SERVICE = "software_service"


class PriceType(StrEnum):
    """The spec shows only ``recurring``; ``one_time`` is the sandbox's documented choice."""

    ONE_TIME = "one_time"
    RECURRING = "recurring"


class Interval(StrEnum):
    """The spec shows only ``quarter``; the others are the sandbox's documented choice."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    QUARTER = "quarter"
    YEAR = "year"


class PricingModel(StrEnum):
    """How a recurring price is charged (the spec's ``pricingModel``)."""

    FLAT_RATE = "flat_rate"


# ---------------------------------------------------------------------------------------------
# Field types


def _currency(value: str) -> str:
    try:
        return check_currency(value)
    except MoneyError as exc:
        raise PydanticCustomError("currency", str(exc)) from None


def _uppercase_method(value: Any) -> Any:
    if (
        isinstance(value, str)
        and value not in PaymentMethodType.__members__
        and (value.upper() in PaymentMethodType.__members__)
    ):
        raise PydanticCustomError("uppercase", f"must be uppercase: {value.upper()!r}, not {value!r}")
    return value


def _amount_in_range(value: Decimal) -> Decimal:
    try:
        return check_amount_range(value)
    except MoneyError as exc:
        raise PydanticCustomError("amount_range", str(exc)) from None


def _has_lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refuse_lone_surrogates(value: Any) -> None:
    """Text must be valid Unicode: a lone surrogate (``"\\ud800"``) cannot be stored or sent as UTF-8."""
    if isinstance(value, str):
        if _has_lone_surrogate(value):
            raise PydanticCustomError("unicode", "contains a lone surrogate (not valid Unicode text)")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _refuse_lone_surrogates(key)
            _refuse_lone_surrogates(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_lone_surrogates(item)


#: Line items of a payment, prices of a product: the spec shows no limit; this one keeps a request's
#: validation (and its error message) small, as real payment APIs do (Stripe: 100 line items).
MAX_LIST_ITEMS = 100


def _integral_in_reach(value: Any) -> Any:
    """Refuse a number too large to be an integer here before turning it into one: int() of a
    JSON ``1e999999999`` (a Decimal) would build a billion-digit integer and hang the process."""
    if isinstance(value, Decimal) and value.is_finite() and value.adjusted() > 18:
        raise PydanticCustomError("int_range", "must be an integer of at most 19 digits")
    return value


#: An integer field that a huge JSON number cannot turn into a billion-digit integer.
Int = Annotated[int, BeforeValidator(_integral_in_reach)]

Currency = Annotated[str, AfterValidator(_currency)]
Amount = Annotated[Decimal, Field(allow_inf_nan=False)]
#: A request amount: positive, and exact as written (never rounded by a Decimal context).
PositiveAmount = Annotated[Decimal, Field(gt=0, allow_inf_nan=False), AfterValidator(_amount_in_range)]
Method = Annotated[PaymentMethodType, BeforeValidator(_uppercase_method)]


def _below_limit(amount: Decimal | None, field: str) -> None:
    """A charge or a price below ``MAX_REQUEST_AMOUNT``: what the sandbox refuses is not sent."""
    if amount is not None and amount >= MAX_REQUEST_AMOUNT:
        raise PydanticCustomError(
            "amount_limit",
            "{field}: must be less than {limit}",
            {"field": field, "limit": f"{MAX_REQUEST_AMOUNT:,}"},
        )


def _amount_fits(amount: Decimal | None, currency: str | None, field: str) -> None:
    if amount is not None and currency is not None and not fits_currency(amount, currency):
        raise PydanticCustomError(
            "currency_decimals",
            "{field}: {amount} has more decimals than {currency} allows ({digits})",
            {"field": field, "amount": str(amount), "currency": currency, "digits": minor_digits(currency)},
        )


class RequestModel(BaseModel):
    """Requests: strict, unknown fields refused, so a misspelt field name is caught before sending."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="after")
    @classmethod
    def _valid_unicode(cls, value: Any, info: ValidationInfo) -> Any:
        _refuse_lone_surrogates(value)
        return value

    @classmethod
    def build(cls, data: Any) -> Self:
        """Validate into the model, raising ``RequestValidationError`` that names each field."""
        if isinstance(data, cls):
            return data
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise RequestValidationError(cls.__name__, describe_errors(exc)) from None

    def to_json(self) -> bytes:
        """The wire body: spec field names, None omitted, Decimals written as exact JSON numbers;
        one over ``MAX_BODY_BYTES`` is refused here, before it is sent, as the sandbox refuses it."""
        body = to_json_bytes(self.model_dump(mode="python", exclude_none=True))
        if len(body) > MAX_BODY_BYTES:
            raise RequestValidationError(
                type(self).__name__, [("body", f"{len(body)} bytes, larger than {MAX_BODY_BYTES} bytes")]
            )
        return body


class ResponseModel(BaseModel):
    """Responses: tolerant, unknown fields kept, every field optional."""

    model_config = ConfigDict(extra="allow", frozen=True)


# ---------------------------------------------------------------------------------------------
# POST /payment


class PriceData(RequestModel):
    """A line item of ``priceDataList``."""

    name: str
    quantity: Int | None = Field(default=None, ge=1, le=2**31 - 1)
    unitAmount: PositiveAmount
    currency: Currency | None = None
    imageUrl: str | None = None

    @model_validator(mode="after")
    def _fits(self) -> Self:
        _amount_fits(self.unitAmount, self.currency, "unitAmount")
        return self


class PaymentRequest(RequestModel):
    """CreatePaymentApiRequest: the body of POST /payment."""

    customerId: str | None = None
    customerEmail: str | None = None
    referenceCustomerId: str | None = None
    paymentInstrumentId: str | None = None
    paymentMethodType: Method
    priceId: str | None = Field(default=None, min_length=1)
    productId: str | None = None
    priceDataList: list[PriceData] | None = Field(default=None, max_length=MAX_LIST_ITEMS)
    amount: PositiveAmount | None = None
    currency: Currency | None = None
    paymentCurrency: Currency | None = None
    merchantReferenceId: str | None = None
    returnUrl: str = Field(min_length=1)
    promotionCode: str | None = None
    metadata: dict[str, StrictStr] | None = None
    platformType: PlatformType | None = None
    deviceType: DeviceType | None = None

    @model_validator(mode="after")
    def _spec_rules(self) -> Self:
        if not (self.customerId or self.customerEmail or self.referenceCustomerId):
            raise PydanticCustomError(
                "customer", "customerId, customerEmail or referenceCustomerId: at least one is required"
            )
        if self.priceId is not None and not self.productId:
            raise PydanticCustomError("product", "productId: required when priceId is given")
        if self.priceId is not None and self.amount is not None:
            raise PydanticCustomError(
                "amount", "amount: not allowed together with priceId (the price sets the amount)"
            )
        if self.priceId is None:
            missing = [name for name in ("amount", "currency") if getattr(self, name) is None]
            if missing:
                raise PydanticCustomError(
                    "amount",
                    "{fields}: required when priceId is absent (amount and currency go together)",
                    {"fields": " and ".join(missing)},
                )
        if self.paymentInstrumentId is None and self.paymentMethodType not in AUTO_INSTRUMENT_METHODS:
            raise PydanticCustomError(
                "instrument",
                "paymentInstrumentId: required for {method} (only CASHAPP, GCASH, TNG, WECHAT, KAKAO, "
                "ALIPAY, QRIS and PROMPTPAY can create one automatically)",
                {"method": self.paymentMethodType.value},
            )
        _amount_fits(self.amount, self.currency, "amount")
        _below_limit(self.amount, "amount")
        for n, item in enumerate(self.priceDataList or ()):  # an item without a currency is in the payment's
            if item.currency is None:
                _amount_fits(item.unitAmount, self.currency, f"priceDataList.{n}.unitAmount")
        return self


class WalletHandleRedirectOrDisplayQrCode(ResponseModel):
    """A wallet's next action: a redirect URL or a QR code to show."""

    imageUrlPng: str | None = None
    imageUrlSvg: str | None = None
    imageDataUrl: str | None = None
    hostedInstructionsUrl: str | None = None
    mobileAuthUrl: str | None = None
    fallbackUrl: str | None = None
    packageName: str | None = None
    expiresAt: Int | None = None
    expiresSecond: Int | None = None


class Action(ResponseModel):
    """What the payer must do next for a payment with status ``next_action``."""

    redirectUrl: str | None = None
    method: str | None = None
    type: str | None = None
    walletHandleRedirectOrDisplayQrCode: WalletHandleRedirectOrDisplayQrCode | None = None
    paymentMethodType: str | None = None
    postData: dict[str, str] | None = None


class PaymentResult(ResponseModel):
    """CreatePaymentApiVo: the ``data`` of a POST /payment response."""

    orderId: str | None = None
    sessionId: str | None = None
    paymentInstrumentId: str | None = None
    status: PaymentStatus | int | None = Field(default=None, union_mode="left_to_right")
    action: Action | None = None
    amount: Amount | None = None
    currency: str | None = None


class SettlementRecord(ResponseModel):
    """One payment of the sandbox's settlement export (``GET /sandbox/payments``) as a processor
    reports it, and what ``SandboxControls.resolve_payment`` answers. Shared by the sandbox, which
    writes it, and the client side, which reads it. Times are epoch milliseconds."""

    orderId: str | None = None
    merchantReferenceId: str | None = None
    customerId: str | None = None
    paymentMethodType: str | None = None
    paymentInstrumentId: str | None = None
    amount: Amount | None = None
    currency: str | None = None
    pricingAmount: Amount | None = None
    pricingCurrency: str | None = None
    status: PaymentStatus | str | None = Field(default=None, union_mode="left_to_right")
    createTime: int | None = None
    updateTime: int | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _status_by_name(cls, value: object) -> object:
        """The export names a status (``success``); the model holds the ``PaymentStatus``."""
        if isinstance(value, str) and value.upper() in PaymentStatus.__members__:
            return PaymentStatus[value.upper()]
        return value


#: The settlement export's columns, in the order the CSV writes them.
EXPORT_COLUMNS: tuple[str, ...] = tuple(SettlementRecord.model_fields)


# ---------------------------------------------------------------------------------------------
# POST /product


class RecurringDetails(RequestModel):
    """The billing period and trial of a recurring price in a product request."""

    interval: Interval
    intervalCount: Int = Field(default=1, ge=1, le=2**31 - 1)
    trialPeriodDays: Int | None = Field(default=None, ge=0, le=3650)
    pricingModel: PricingModel | None = None


class PriceItem(RequestModel):
    """A price of ``priceList`` in a product creation request.

    ``currencyOptions`` is not in the spec: it carries the fixed multi-currency amounts that spec
    rule 2 refers to ("the configured fixed multi-currency price"), as the sandbox accepts them.
    """

    currency: Currency
    unitAmount: PositiveAmount
    priceType: PriceType = PriceType.ONE_TIME
    isDefaultPrice: bool | None = None
    recurringDetails: RecurringDetails | None = None
    currencyOptions: dict[Currency, PositiveAmount] | None = None

    @model_validator(mode="after")
    def _recurring(self) -> Self:
        if self.priceType is PriceType.RECURRING and self.recurringDetails is None:
            raise PydanticCustomError("recurring", "recurringDetails: required when priceType is recurring")
        if self.priceType is not PriceType.RECURRING and self.recurringDetails is not None:
            raise PydanticCustomError(
                "recurring", "recurringDetails: only allowed when priceType is recurring"
            )
        _amount_fits(self.unitAmount, self.currency, "unitAmount")
        _below_limit(self.unitAmount, "unitAmount")
        for currency, amount in (self.currencyOptions or {}).items():
            _amount_fits(amount, currency, f"currencyOptions.{currency}")
            _below_limit(amount, f"currencyOptions.{currency}")
        return self


class ProductRequest(RequestModel):
    """The body of POST /product."""

    name: str = Field(min_length=1)
    localizedNames: dict[str, StrictStr] | None = None
    description: str | None = None
    image: str | None = None
    taxCategory: TaxCategory | None = None
    defaultPrice: str | None = None
    priceList: list[PriceItem] | None = Field(default=None, max_length=MAX_LIST_ITEMS)

    @model_validator(mode="after")
    def _one_default(self) -> Self:
        defaults = sum(1 for price in self.priceList or [] if price.isDefaultPrice)
        if defaults > 1:
            raise PydanticCustomError("default", "priceList: at most one price may have isDefaultPrice")
        return self


class TransformQuantity(ResponseModel):
    """How a price's quantity is divided before charging (as the service sends it)."""

    divideBy: Int | None = None


class PriceRecurring(ResponseModel):
    """The billing period and trial of a recurring price, as the service answers."""

    trialPeriodDays: Int | None = None
    intervalCount: Int | None = None
    transformQuantity: TransformQuantity | None = None


class Price(ResponseModel):
    """A price record in the ``priceList`` of a Product response."""

    priceId: str | None = None
    priceSnapshotId: str | None = None
    productId: str | None = None
    unitAmount: Amount | None = None
    recurring: PriceRecurring | None = None
    active: bool | None = None
    createTime: Int | None = None


class Product(ResponseModel):
    """A product with its prices, as ``POST /product`` answers."""

    productId: str | None = None
    name: str | None = None
    active: bool | None = None
    description: str | None = None
    defaultPrice: str | None = None
    image: str | None = None
    priceList: list[Price] | None = None
    createTime: Int | None = None
    updateTime: Int | None = None
    localizedNames: dict[str, str] | None = None


# ---------------------------------------------------------------------------------------------
# GET /subscription/{id}


class InvoiceRecurring(ResponseModel):
    """The recurring terms of an invoice item's price."""

    trialPeriodDays: Int | None = None
    intervalCount: Int | None = None


class InvoicePrice(ResponseModel):
    """The price an invoice item charges."""

    productId: str | None = None
    productName: str | None = None
    priceId: str | None = None
    priceSnapshotId: str | None = None
    unitAmount: Amount | None = None
    quantity: Int | None = None
    recurring: InvoiceRecurring | None = None


class InvoiceItem(ResponseModel):
    """One invoice of a subscription: the recurring one or the upcoming one."""

    invoiceItemId: str | None = None
    amount: Amount | None = None
    description: str | None = None
    periodStart: Int | None = None
    periodEnd: Int | None = None
    proration: bool | None = None
    price: InvoicePrice | None = None


class ScheduledPhase(ResponseModel):
    """A change of price or quantity a subscription will make at a given cycle."""

    sequence: Int | None = None
    effectiveCycle: Int | None = None
    priceSnapshotId: str | None = None
    quantity: Int | None = None
    metadata: dict[str, Any] | None = None


class Subscription(ResponseModel):
    """A subscription as ``GET /subscription/{id}`` answers."""

    subscriptionId: str | None = None
    customerId: str | None = None
    productId: str | None = None
    priceId: str | None = None
    priceSnapshotId: str | None = None
    createTime: Int | None = None
    quantity: Int | None = None
    paymentMethodType: str | None = None
    paymentInstrumentId: str | None = None
    merchantReference: str | None = None
    trialStart: Int | None = None
    trialEnd: Int | None = None
    currentPeriodStart: Int | None = None
    currentPeriodEnd: Int | None = None
    cancelAt: Int | None = None
    cancelAtPeriodEnd: bool | None = None
    canceledAt: Int | None = None
    cancelReason: str | None = None
    recurringInvoiceItem: InvoiceItem | None = None
    upcomingInvoiceItem: InvoiceItem | None = None
    scheduledPhases: list[ScheduledPhase] | None = None
    elapsedCycles: Int | None = None
    sessionId: str | None = None
    metadata: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------
# Envelope

DataT = TypeVar("DataT")


class Envelope(ResponseModel, Generic[DataT]):
    """``{code, msg, data}``: every JSON response. Success is code 200, msg ``success``."""

    code: int
    msg: str | None = None
    data: DataT | None = None


SUCCESS_CODE = 200
#: The largest request body the sandbox reads (413 above); the client refuses to send one larger.
MAX_BODY_BYTES = 1024 * 1024
SUCCESS_MSG: Literal["success"] = "success"

# The spec's own names, for looking a model up in api-spec.md.
CreatePaymentApiRequest = PaymentRequest
CreatePaymentApiVo = PaymentResult


# ---------------------------------------------------------------------------------------------
# JSON


#: Built once: ``json.loads(parse_float=...)`` and ``simplejson.dumps(...)`` with options build a
#: new decoder or encoder on every call, which costs more than a small response's parsing.
_DECODER = json.JSONDecoder(parse_float=Decimal)
_ENCODER = simplejson.JSONEncoder(use_decimal=True, separators=(",", ":"), ensure_ascii=False)


def parse_json(content: bytes | str) -> Any:
    """Parse JSON with every non-integer number as an exact ``Decimal`` (never through float)."""
    if isinstance(content, bytes | bytearray):
        content = content.decode(json.detect_encoding(content), "surrogatepass")
    return _DECODER.decode(content)


def to_json_bytes(value: Any) -> bytes:
    """Serialise with Decimals as exact JSON numbers (``12.30``, not ``"12.30"`` or a float)."""
    return _ENCODER.encode(value).encode()


def merge_fields(request: BaseModel | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Any:
    """A request given as a model, a mapping, keyword arguments, or a model with keyword overrides."""
    if isinstance(request, BaseModel):
        return {**request.model_dump(exclude_none=True), **fields} if fields else request
    return {**(request or {}), **fields}


#: A check's message that starts with the field it is about (``unitAmount: 1.5 has more ...``).
_NAMED_FIELD = re.compile(r"([A-Za-z_]\w*(?:\.\w+)*): (.+)", re.DOTALL)


def describe_errors(exc: ValidationError) -> list[tuple[str, str]]:
    """Turn pydantic's errors into ``(field path, message)`` with the spec's field names."""
    described: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"])
        message = error["msg"]
        named = _NAMED_FIELD.match(message)
        if named:  # a model's own check names its field: one dotted path, ``priceList.0.unitAmount``
            field = f"{field}.{named[1]}" if field else named[1]
            message = named[2]
        if error["type"] == "extra_forbidden":
            message = "unknown field (not in the API spec)"
        elif error["type"] == "missing":
            message = "required"
        described.append((field, message))
    return described
