"""Envelopes, errors and body reading shared by every route.

Routes read the raw body themselves and answer with ``encode`` (``to_json_bytes``'s encoding) so
that amounts stay exact Decimals end to end (FastAPI's encoder would turn them into floats).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import Response

from toolkit.errors import RequestValidationError
from toolkit.models import MAX_BODY_BYTES, SUCCESS_CODE, SUCCESS_MSG, RequestModel, parse_json, to_json_bytes
from toolkit.sandbox.checkout import QR_PATH

ModelT = TypeVar("ModelT", bound=RequestModel)

#: Fields whose JSON type is checked before pydantic (which would coerce "12.30" or "3" silently).
_NUMBER_FIELDS = frozenset({"amount", "unitAmount"})
_INTEGER_FIELDS = frozenset(
    {
        "quantity",
        "intervalCount",
        "trialPeriodDays",
        "effectiveCycle",
        "sequence",
        "milliseconds",
        "seconds",
        "minutes",
        "hours",
        "days",
    }
)
_BOOLEAN_FIELDS = frozenset({"isDefaultPrice", "atPeriodEnd"})
#: A map of the merchant's own keys and values, typed by its model alone: a key there named like a
#: field (``metadata.atPeriodEnd``) is not that field.
_FREE_FORM = "metadata"


class ApiError(Exception):
    """An error answered as an envelope ``{code, msg, data: null}`` with the same HTTP status."""

    def __init__(self, status: int, msg: str) -> None:
        self.status = status
        self.msg = msg
        super().__init__(msg)


class BadRequest(ApiError):
    """HTTP 400 whose msg names the field and the rule."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(400, f"{field}: {rule}" if field else rule)


class NotFound(ApiError):
    """HTTP 404: a resource named in the path or the body does not exist (msg names the field)."""

    def __init__(self, msg: str) -> None:
        super().__init__(404, msg)


class Conflict(ApiError):
    """HTTP 409: a well-formed request that the current state of a resource refuses.

    The request is valid by the OpenAPI document; what it names exists but cannot be used so
    (an inactive or recurring price, another customer's instrument, a canceled subscription).
    """

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(409, f"{field}: {rule}")


class Unauthorized(Exception):
    """HTTP 401 with a plain-string body; the message never contains the key."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


#: The shared JSON of client and sandbox: Decimals exact both ways, encoder and decoder built once.
decode = parse_json
encode = to_json_bytes


def json_response(value: Any, status: int = 200) -> Response:
    """A JSON response of ``value`` encoded exactly (Decimals as numbers)."""
    return Response(encode(value), status_code=status, media_type="application/json")


def ok_body(data: Any) -> bytes:
    """The encoded success envelope (for responses kept and served again)."""
    return encode({"code": SUCCESS_CODE, "msg": SUCCESS_MSG, "data": data})


def ok_bytes(body: bytes) -> Response:
    """A success response with an envelope already encoded by ``ok_body``."""
    return Response(body, media_type="application/json")


def ok(data: Any) -> Response:
    """The success envelope."""
    return ok_bytes(ok_body(data))


def error_response(status: int, msg: str) -> Response:
    """The error envelope (``code`` = HTTP status, ``data`` null) with its status."""
    return json_response({"code": status, "msg": msg, "data": None}, status)


async def read_body(request: Request) -> bytes:
    """The raw body, refusing (413) anything over ``MAX_BODY_BYTES`` without reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, f"body: larger than {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ApiError(413, f"body: larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_object(request: Request, *, required: bool = True) -> dict[str, Any]:
    """The body as a JSON object with exact Decimals; malformed or non-object bodies are 400."""
    raw = await read_body(request)
    if not raw.strip():
        if required:
            raise BadRequest("body", "a JSON object is required")
        return {}
    try:
        value = decode(raw)
    except (ValueError, RecursionError):
        raise BadRequest("body", "malformed JSON") from None
    if not isinstance(value, dict):
        raise BadRequest("body", "must be a JSON object")
    return value


#: The JSON type each typed field must have (keys of the three sets above), looked up once per key.
_FIELD_TYPES: dict[str, str] = {
    **dict.fromkeys(_NUMBER_FIELDS, "number"),
    **dict.fromkeys(_INTEGER_FIELDS, "integer"),
    **dict.fromkeys(_BOOLEAN_FIELDS, "boolean"),
}


#: What ``decode`` gives besides lists and dicts: nothing below them to check (and cheaper to rule out
#: by exact type than by ``isinstance`` against the ``Mapping`` ABC).
_SCALARS = frozenset({str, int, bool, float, Decimal})


def _is_integer(value: Any) -> bool:
    """A JSON integer as JSON Schema reads one: ``2`` or ``2.0`` (a number with no fractional part).

    OpenAPI 3.1 documents use JSON Schema 2020-12, where ``2.0`` is an integer; refusing it would
    refuse what the document calls valid. Past 19 digits it is refused here, before pydantic turns
    it into an integer (``1E+999999999`` would become a billion-digit one).
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return (
        isinstance(value, Decimal)
        and value.is_finite()
        and value.adjusted() <= 18
        and value == value.to_integral_value()
    )


def check_types(value: Any, path: str = "") -> None:
    """Refuse wrong JSON types that pydantic's lax mode would coerce (string amounts, "3", 1 for true).

    Only containers are descended into (a scalar has nothing below it), and a field's path is
    spelled out only when it is needed.
    """
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, list | Mapping):
                check_types(item, f"{path}.{index}" if path else str(index))
        return
    if not isinstance(value, Mapping):
        return
    for key, item in value.items():
        if item is None:
            continue
        kind = _FIELD_TYPES.get(key)
        if kind is not None and (problem := _wrong_type(kind, item)):
            raise BadRequest(f"{path}.{key}" if path else str(key), problem)
        if type(item) in _SCALARS:
            continue
        if key == _FREE_FORM:  # the merchant's own keys: none of them is a field of the API
            continue
        if isinstance(item, list | Mapping):
            field = f"{path}.{key}" if path else str(key)
            if key == "currencyOptions" and isinstance(item, Mapping):
                _check_amounts(item, field)
            check_types(item, field)


def _wrong_type(kind: str, item: Any) -> str | None:
    """What is wrong with a field's value for its JSON type, or None when it is right."""
    if kind == "number" and (isinstance(item, bool) or not isinstance(item, int | Decimal)):
        return "must be a JSON number"
    if kind == "integer" and not _is_integer(item):
        return "must be a JSON integer"
    if kind == "boolean" and not isinstance(item, bool):
        return "must be true or false"
    return None


def _check_amounts(amounts: Mapping[str, Any], field: str) -> None:
    """Every amount of a mapping by currency (``currencyOptions``) is a JSON number."""
    for currency, amount in amounts.items():
        if isinstance(amount, bool) or not isinstance(amount, int | Decimal):
            raise BadRequest(f"{field}.{currency}", "must be a JSON number")


def build(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """Validate a body with the shared model; the first error becomes a 400 naming its field."""
    try:
        check_types(data)
    except RecursionError:
        raise BadRequest("body", "nested too deeply") from None
    try:
        return model.build(data)
    except RequestValidationError as exc:
        raise ApiError(400, exc.detail) from None


_BASES: dict[tuple[Any, ...], str] = {}


def image_base(request: Request) -> str:
    """The absolute URL the image names are appended to, as the client reached this server.

    Remembered per scheme, Host header, server and root path (building ``request.base_url`` costs
    ~10 us a call).
    """
    scope = request.scope
    key = (scope.get("scheme"), request.headers.get("host"), scope.get("server"), scope.get("root_path"))
    base = _BASES.get(key)
    if base is None:
        if len(_BASES) >= 64:  # Host headers are the client's to choose: stay bounded
            _BASES.clear()
        base = _BASES[key] = f"{str(request.base_url).rstrip('/')}{QR_PATH}/"
    return base
