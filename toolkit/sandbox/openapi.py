"""The OpenAPI document: request bodies from the shared models' JSON schema, envelopes, errors, links.

Routes read raw bodies (for exact Decimals), so FastAPI cannot infer their schemas; each route
declares them with ``operation(...)`` and ``install(app)`` merges the collected components.

Clients and tests are generated from this document, so it says what the sandbox enforces: a
request it calls valid is never refused as malformed (400), and one it calls invalid is. The
models' JSON schemas are amended with what pydantic cannot write from validators (``_AMENDMENTS``):
the spec's cross-field rules, decimals per currency, the amount limits, and the sandbox's tables
(the currencies each method charges, those it converts from). Rules that span fields are written
as one anyOf over a finite table where they can be: tools that generate data from a schema expand
independent conditionals into each other's branches, and give up past a few dozen.

What JSON Schema cannot say is written in descriptions: text must be valid Unicode (no lone
surrogate); whether an identifier names something (404), and whether what it names takes the
request (409, including whether an amount survives conversion at the current FX rates), depends
on the store, not on the request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from babel.numbers import list_currencies
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from starlette.routing import Match, Route, compile_path

from toolkit.control_models import (
    FAULT_MODES,
    FAULT_STATUSES,
    MODE_FIELDS,
    MODE_REQUIRED,
    MODE_SPECIFIC_FIELDS,
    RETRY_AFTER_STATUSES,
    SELECTION_FIELDS,
)
from toolkit.models import AUTO_INSTRUMENT_METHODS, PriceType
from toolkit.money import MAX_DECIMALS, MAX_INTEGER_DIGITS, MAX_REQUEST_AMOUNT, is_currency, minor_digits
from toolkit.sandbox import rules
from toolkit.sandbox.db import TEST_INSTRUMENTS

_COMPONENTS: dict[str, Any] = {}
_REF = "#/components/schemas/{model}"

SECURITY_SCHEMES: dict[str, Any] = {
    "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"},
    "Timestamp": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Timestamp",
        "description": "Current time in ms since the Unix epoch, within the sandbox's tolerance.",
    },
}
SECURITY: list[dict[str, list[str]]] = [{"ApiKey": [], "Timestamp": []}]

RULES_BEYOND_SCHEMAS = (
    "Request schemas state every rule the sandbox checks on the request alone. Beyond them: text "
    "must be valid Unicode (a lone surrogate such as \\ud800 is refused with 400, as I-JSON, RFC "
    "7493, requires); an identifier that names nothing in the store (customer, instrument, "
    "product, price, snapshot, subscription, order) is answered 404; and a request that what it "
    "names refuses (an inactive or recurring price, another customer's instrument, a currency "
    "other than the price's, an amount that does not convert at the current FX rates, a canceled "
    "subscription, a settled payment, a clock advance past 9000-01-01) is answered 409."
)

_ERROR_ENVELOPE = {
    "type": "object",
    "required": ["code", "msg", "data"],
    "properties": {"code": {"type": "integer"}, "msg": {"type": "string"}, "data": {"type": "null"}},
}
_ERROR_TEXT = {
    400: "Invalid request: msg names the field and the rule.",
    404: "Unknown resource (in the path or named by an identifier in the body): msg names the field.",
    409: "Refused by the current state of a resource the request names: msg names the field and why.",
    413: "Body larger than 1 MiB.",
}

# ---------------------------------------------------------------------------------------------
# What the sandbox enforces, as JSON Schema

#: Every code ``toolkit.money.is_currency`` accepts (ISO 4217, as babel's CLDR data lists it).
CURRENCIES: tuple[str, ...] = tuple(sorted(code for code in list_currencies() if is_currency(code)))
#: Currencies some payment method charges: the only possible ``paymentCurrency``.
CHARGEABLE: tuple[str, ...] = tuple(sorted({c for cs in rules.METHOD_CURRENCIES.values() for c in cs}))
#: Currencies with a sandbox FX rate: the only ones converted from.
CONVERTIBLE: tuple[str, ...] = tuple(sorted(rules.FX_PER_USD))
#: Amounts in requests have at most 14 digits before the point and 4 after (``money``).
_REQUEST_AMOUNT_LIMIT = 10**MAX_INTEGER_DIGITS
_SMALLEST_STEP = Decimal(1).scaleb(-MAX_DECIMALS)


def _json_number(value: Decimal) -> int | float:
    """A Decimal as the JSON number that spells it exactly (the document is written with ``json``)."""
    if value == value.to_integral_value():
        return int(value)
    number = float(value)
    assert Decimal(repr(number)) == value, value
    return number


def _step(digits: int) -> int | float:
    return _json_number(Decimal(1).scaleb(-digits))


def _by_digits(currencies: tuple[str, ...]) -> dict[int, list[str]]:
    """Currencies grouped by their number of decimals (0: JPY, 2: USD, 3: KWD, 4: CLF)."""
    groups: dict[int, list[str]] = {}
    for code in currencies:
        groups.setdefault(minor_digits(code), []).append(code)
    return dict(sorted(groups.items()))


def _amount(limit: int) -> dict[str, Any]:
    """A positive request amount below ``limit`` with at most four decimals."""
    return {
        "type": "number",
        "exclusiveMinimum": 0,
        "exclusiveMaximum": limit,
        "multipleOf": _json_number(_SMALLEST_STEP),
    }


def _set(node: dict[str, Any], **keywords: Any) -> None:
    """Add keywords to a property's schema, or to its non-null branch when it is nullable."""
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    target = branches[0] if len(branches) == 1 else node
    target.update(keywords)


def _given(field: str, **schema: Any) -> dict[str, Any]:
    """Present and not null (pydantic treats an explicit null as absent)."""
    return {"required": [field], "properties": {field: {"not": {"type": "null"}, **schema}}}


def _absent(field: str) -> dict[str, Any]:
    return {"properties": {field: {"type": "null"}}}


def _with(*parts: dict[str, Any]) -> dict[str, Any]:
    """The conjunction of object schemas made of ``required`` and ``properties`` (merged, not nested)."""
    merged: dict[str, Any] = {"required": [], "properties": {}}
    for part in parts:
        merged["required"] += [name for name in part.get("required", []) if name not in merged["required"]]
        for name, schema in part.get("properties", {}).items():
            merged["properties"][name] = {**merged["properties"].get(name, {}), **schema}
        merged.update({k: v for k, v in part.items() if k not in ("required", "properties")})
    if not merged["required"]:
        del merged["required"]
    return merged


def _decimals(digits: int) -> dict[str, Any]:
    """Keywords of an amount in a currency with ``digits`` decimals (four need nothing more)."""
    return {"multipleOf": _step(digits)} if digits < MAX_DECIMALS else {}


_TEST_INSTRUMENTS = {
    "examples": list(TEST_INSTRUMENTS),
    "description": "An instrument of the customer, or a test instrument (any customer, any method): "
    "pi_test_success, _pending, _failure and _3ds force that outcome; pi_test_default forces none.",
}

_CUSTOMER = {
    "anyOf": [_given(field, minLength=1) for field in ("customerId", "customerEmail", "referenceCustomerId")],
    "description": "At least one customer identifier that is not empty.",
}


def _instrument(*, default_method: str | None) -> dict[str, Any]:
    """paymentInstrumentId, unless the method creates one itself (spec rule 3)."""
    auto = sorted(method.value for method in AUTO_INSTRUMENT_METHODS)
    auto_branch: dict[str, Any] = {"properties": {"paymentMethodType": {"enum": auto}}}
    if default_method is not None and default_method not in auto:
        auto_branch["required"] = ["paymentMethodType"]
    return {
        "anyOf": [_given("paymentInstrumentId"), auto_branch],
        "description": f"paymentInstrumentId, unless paymentMethodType is one of {', '.join(auto)}.",
    }


def _methods_charging(currency: str) -> tuple[str, ...]:
    return tuple(method.value for method, charged in rules.METHOD_CURRENCIES.items() if currency in charged)


def _by_methods() -> dict[tuple[str, ...], list[str]]:
    """Chargeable currencies grouped by the methods that charge them."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for currency in CHARGEABLE:
        groups.setdefault(_methods_charging(currency), []).append(currency)
    return groups


def _charge() -> dict[str, Any]:
    """Spec rule 2 with the sandbox's table: the charged currency is one the method supports.

    One anyOf over a finite table (conditionals side by side multiply into each other).
    """
    charged_as_is = [_with(_absent("paymentCurrency"), _absent("currency"))] + [
        _with(
            _absent("paymentCurrency"),
            _given("currency", enum=currencies),
            {"properties": {"paymentMethodType": {"enum": list(methods)}}},
        )
        for methods, currencies in _by_methods().items()
    ]
    converted = [
        _with(
            _given("paymentCurrency", enum=currencies),
            {"properties": {"paymentMethodType": {"enum": list(methods)}}},
        )
        for methods, currencies in _by_methods().items()
    ]
    return {
        "anyOf": charged_as_is + converted,
        "description": (
            "The charged currency, paymentCurrency or else currency, is one the method supports. "
            "(With priceId and neither, the price's currency is charged: checked against the store, 409.)"
        ),
    }


def _by_decimals(
    currency: str, currencies: tuple[str, ...], rule: Callable[[int], dict[str, Any]], description: str
) -> dict[str, Any]:
    """``rule(digits)`` holds when the currency named by ``currency`` has ``digits`` decimals."""
    return {
        "anyOf": [_absent(currency)]
        + [
            _with(_given(currency, enum=codes), rule(digits))
            for digits, codes in _by_digits(currencies).items()
        ],
        "description": description,
    }


def _amount_decimals(currency: str, amount: str, currencies: tuple[str, ...]) -> dict[str, Any]:
    """``amount`` has no more decimals than the currency named by ``currency`` allows."""
    return _by_decimals(
        currency,
        currencies,
        lambda digits: {"properties": {amount: _decimals(digits)}},
        f"{amount} has no more decimals than {currency} has (JPY 0, USD 2, KWD 3).",
    )


def _items_in_payment_currency() -> dict[str, Any]:
    """A line item without a currency of its own is in the payment's ``currency``: its
    ``unitAmount`` has that currency's decimals (``PaymentRequest``'s check)."""
    return _by_decimals(
        "currency",
        CONVERTIBLE,
        lambda digits: {
            "properties": {
                "priceDataList": {
                    "items": {
                        "if": _absent("currency"),
                        "then": {"properties": {"unitAmount": _decimals(digits)}},
                    }
                }
            }
        },
        "A line item without a currency is in the payment's: unitAmount has its decimals.",
    )


def _payment_request(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    for field in ("customerId", "paymentInstrumentId", "priceId", "productId"):
        _set(properties[field], minLength=1)
    properties["paymentInstrumentId"].update(_TEST_INSTRUMENTS)
    _set(properties["amount"], **_amount(int(MAX_REQUEST_AMOUNT)))
    # Charged as is, currency is one some method charges; converted from, it needs an FX rate.
    _set(properties["currency"], enum=list(CONVERTIBLE))
    _set(properties["paymentCurrency"], enum=list(CHARGEABLE))
    schema["allOf"] = [
        _CUSTOMER,
        {
            "if": _given("priceId"),
            "then": _with(_given("productId"), _absent("amount")),
            "else": _with(_given("amount"), _given("currency")),
            "description": "priceId with productId (the price sets the amount), else amount with currency.",
        },
        _instrument(default_method=None),
        _charge(),
        _amount_decimals("currency", "amount", CONVERTIBLE),
        _items_in_payment_currency(),
    ]
    schema["description"] = (
        f"{schema.get('description', '')}\n\nCharged in another currency (paymentCurrency), the "
        "amount is converted with the sandbox's FX rates and rounded half-even: an amount that does "
        "not convert to a positive one of at most 14 digits at the current rates is refused with 409."
    )


def _price_data(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    _set(properties["unitAmount"], **_amount(_REQUEST_AMOUNT_LIMIT))
    _set(properties["currency"], enum=list(CURRENCIES))
    schema["allOf"] = [_amount_decimals("currency", "unitAmount", CURRENCIES)]


def _product_request(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    properties["defaultPrice"] = {
        "type": "null",
        "description": "Not accepted by the sandbox: a price cannot be named before it exists. "
        "Set isDefaultPrice on one priceList item instead.",
    }
    _set(properties["priceList"], contains=_given("isDefaultPrice", const=True), minContains=0, maxContains=1)


def _price_item(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    _set(properties["currency"], enum=list(CURRENCIES))
    _set(properties["unitAmount"], **_amount(int(MAX_REQUEST_AMOUNT)))
    # Keys matched by patternProperties escape additionalProperties: each pattern says it all.
    _set(
        properties["currencyOptions"],
        propertyNames={"enum": list(CURRENCIES)},
        patternProperties={
            f"^(?:{'|'.join(codes)})$": {**_amount(int(MAX_REQUEST_AMOUNT)), **_decimals(digits)}
            for digits, codes in _by_digits(CURRENCIES).items()
        },
        additionalProperties=False,
    )
    recurring = PriceType.RECURRING.value
    schema["allOf"] = [
        {
            "if": {"required": ["priceType"], "properties": {"priceType": {"const": recurring}}},
            "then": _given("recurringDetails"),
            "else": _absent("recurringDetails"),
            "description": "recurringDetails when, and only when, priceType is recurring.",
        },
        {
            "anyOf": [
                {
                    "properties": {
                        "currency": {"const": code},
                        "unitAmount": _decimals(minor_digits(code)),
                        "currencyOptions": {"not": {"type": "object", "required": [code]}},
                    }
                }
                for code in CURRENCIES
            ],
            "description": "unitAmount has the currency's decimals; currencyOptions has no amount in it.",
        },
    ]


def _recurring_details(schema: dict[str, Any]) -> None:
    schema["anyOf"] = [
        {"properties": {"interval": {"const": interval}, "intervalCount": {"maximum": most}}}
        for interval, most in rules.MAX_INTERVAL_COUNT.items()
    ]
    schema["description"] = "A billing period (intervalCount intervals) is at most 100 years."


def _subscription_request(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    for field in ("customerId", "paymentInstrumentId"):
        _set(properties[field], minLength=1)
    properties["paymentInstrumentId"].update(_TEST_INSTRUMENTS)
    default = properties["paymentMethodType"].get("default")
    schema["allOf"] = [_CUSTOMER, _instrument(default_method=default)]


def _non_null(node: dict[str, Any]) -> dict[str, Any]:
    """A nullable property's schema without its null branch (a required field is given)."""
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) != 1:
        return dict(node)
    rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
    return {**rest, **branches[0]}


#: Which requests meet a fault: the next ``count`` (or the next one, with neither), or a seeded share.
_FAULT_SELECTION = {
    "oneOf": [
        _with(_absent("probability"), _absent("seed")),
        _with(_given("probability"), _given("seed"), _absent("count")),
    ],
    "description": "count (or neither: the next matching request), or probability with seed; never both.",
}
_RETRY_AFTER = {
    "anyOf": [
        _absent("retryAfter"),
        {"required": ["status"], "properties": {"status": {"enum": list(RETRY_AFTER_STATUSES)}}},
    ],
    "description": "retryAfter only with status 429 or 503 (a 429 without it answers Retry-After: 1).",
}


def fault_component(mode: str) -> str:
    """The component that describes the rules of one mode (``FaultRuleDropAfterCommit``)."""
    return "FaultRule" + "".join(part.capitalize() for part in mode.split("_"))


#: Rules the sandbox accepts, by mode (the examples phase of a test run sends them).
FAULT_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "delay": [{"route": "POST /payment", "mode": "delay", "delayMs": 1500, "count": 2}],
    "error": [
        {"route": "POST /payment", "mode": "error", "status": 503, "count": 1},
        {"route": "*", "mode": "error", "status": 429, "retryAfter": 2, "probability": 0.25, "seed": 7},
    ],
    "drop_before_commit": [{"route": "POST /product", "mode": "drop_before_commit"}],
    "drop_after_commit": [{"route": "POST /payment", "mode": "drop_after_commit", "count": 1}],
    "hang_after_commit": [{"route": "GET /subscription", "mode": "hang_after_commit", "count": 1}],
}


def _fault_rule_request(schema: dict[str, Any]) -> None:
    """One schema per mode (its fields, required and allowed), chosen by ``mode``.

    Built from pydantic's schema of the flat model, which keeps each field's type and bounds, and
    the tables its validator reads (``MODE_FIELDS``, ``MODE_REQUIRED``, the statuses). A field a
    mode does not take may only be null (the sandbox reads null as absent).
    """
    properties = schema["properties"]
    _set(properties["status"], enum=list(FAULT_STATUSES))
    mapping: dict[str, str] = {}
    for mode in FAULT_MODES:
        fields: dict[str, Any] = {
            "route": properties["route"],
            "mode": {"type": "string", "const": mode},
            **{name: properties[name] for name in SELECTION_FIELDS},
        }
        for name in MODE_SPECIFIC_FIELDS:
            if name in MODE_REQUIRED[mode]:
                fields[name] = _non_null(properties[name])
            elif name in MODE_FIELDS[mode]:
                fields[name] = properties[name]
            else:
                fields[name] = {"type": "null", "description": f"Not taken by mode {mode}."}
        name = fault_component(mode)
        _COMPONENTS[name] = {
            "title": name,
            "type": "object",
            "required": ["route", "mode", *sorted(MODE_REQUIRED[mode])],
            "properties": fields,
            "additionalProperties": False,
            "allOf": [_FAULT_SELECTION, *([_RETRY_AFTER] if "retryAfter" in MODE_FIELDS[mode] else [])],
            "examples": FAULT_EXAMPLES[mode],
        }
        mapping[mode] = _REF.format(model=name)
    description = schema.get("description", "")
    schema.clear()
    schema.update(
        {
            "title": "FaultRuleRequest",
            "description": description,
            "oneOf": [{"$ref": ref} for ref in mapping.values()],
            "discriminator": {"propertyName": "mode", "mapping": mapping},
            "examples": [example for examples in FAULT_EXAMPLES.values() for example in examples],
        }
    )


_RETURN_URL = "https://shop.example/return"

#: Component name -> request bodies the sandbox accepts (the examples phase of a test run sends them).
_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "PaymentRequest": [
        {
            "customerEmail": "buyer@example.com",
            "paymentMethodType": "CARD",
            "paymentInstrumentId": "pi_test_success",
            "amount": 12.3,
            "currency": "USD",
            "merchantReferenceId": "order-1001",
            "returnUrl": _RETURN_URL,
        },
        {
            "referenceCustomerId": "cust-42",
            "paymentMethodType": "ALIPAY",
            "amount": 88,
            "currency": "CNY",
            "returnUrl": _RETURN_URL,
            "platformType": "WAP",
            "deviceType": "iOS",
        },
        {
            "customerEmail": "buyer@example.com",
            "paymentMethodType": "GCASH",
            "amount": 10,
            "currency": "USD",
            "paymentCurrency": "PHP",
            "returnUrl": _RETURN_URL,
            "priceDataList": [{"name": "Widget", "quantity": 2, "unitAmount": 5, "currency": "USD"}],
        },
    ],
    "ProductRequest": [
        {
            "name": "Pro plan",
            "taxCategory": "software_service",
            "priceList": [
                {
                    "currency": "USD",
                    "unitAmount": 30,
                    "priceType": "recurring",
                    "isDefaultPrice": True,
                    "recurringDetails": {
                        "interval": "month",
                        "intervalCount": 1,
                        "trialPeriodDays": 7,
                        "pricingModel": "flat_rate",
                    },
                },
            ],
        },
        {
            "name": "E-book",
            "localizedNames": {"de": "E-Buch"},
            "taxCategory": "ebook",
            "priceList": [
                {
                    "currency": "USD",
                    "unitAmount": 9.99,
                    "isDefaultPrice": True,
                    "currencyOptions": {"EUR": 9.49},
                },
            ],
        },
    ],
    "SubscriptionCreateRequest": [
        {
            "customerEmail": "buyer@example.com",
            "productId": "prod_from_post_product",
            "priceId": "price_recurring",
            "paymentMethodType": "CARD",
            "paymentInstrumentId": "pi_test_success",
        },
    ],
    "ClockAdvanceRequest": [{"days": 31}],
    "CancelRequest": [{"atPeriodEnd": False, "reason": "customer request"}],
    "ResolveRequest": [{"status": "success"}],
}


def _bank_amount(schema: dict[str, Any]) -> None:
    _set(schema["properties"]["amount"], **_amount(int(MAX_REQUEST_AMOUNT)))


def _bank_deposit_request(schema: dict[str, Any]) -> None:
    """A deposit's amount has no more decimals than its currency (JPY 0, USD 2, KWD 3)."""
    _bank_amount(schema)
    _set(schema["properties"]["currency"], enum=list(CHARGEABLE))  # the sandbox's accounts
    schema["allOf"] = [_amount_decimals("currency", "amount", CHARGEABLE)]


#: Component name -> what to add to pydantic's schema of it.
_AMENDMENTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "PaymentRequest": _payment_request,
    "PriceData": _price_data,
    "ProductRequest": _product_request,
    "PriceItem": _price_item,
    "RecurringDetails": _recurring_details,
    "SubscriptionCreateRequest": _subscription_request,
    "FaultRuleRequest": _fault_rule_request,
    "BankChangeRequest": _bank_amount,
    "BankDepositRequest": _bank_deposit_request,
}

# ---------------------------------------------------------------------------------------------
# Components and operations

#: pydantic writes the bounds of an annotated type inside ``X | None`` with its own names.
_BOUND_KEYWORDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _normalise(node: Any) -> Any:
    """Pydantic's schema in JSON Schema's terms: Decimals are numbers, bounds use JSON Schema names."""
    if isinstance(node, list):
        return [_normalise(item) for item in node]
    if not isinstance(node, dict):
        return node
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        kinds = [s.get("type") if isinstance(s, dict) else None for s in any_of]
        # Pydantic writes Decimal as number-or-string; the wire type of every amount is a number.
        if "number" in kinds and "string" in kinds and set(kinds) <= {"number", "string", "null"}:
            kept = [s for s, kind in zip(any_of, kinds, strict=True) if kind != "string"]
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            node = {**rest, **kept[0]} if len(kept) == 1 else {**rest, "anyOf": kept}
    names = _BOUND_KEYWORDS if node.get("type") in ("integer", "number") else {}
    return {names.get(key, key): _normalise(value) for key, value in node.items()}


def model_ref(model: type[BaseModel]) -> dict[str, Any]:
    """Register ``model`` (and the models it uses) as components; return a ``$ref`` to it."""
    schema = model.model_json_schema(ref_template=_REF, mode="validation")
    definitions = {**schema.pop("$defs", {}), model.__name__: schema}
    for name, definition in definitions.items():
        if name not in _COMPONENTS:
            component = _normalise(definition)
            if name in _AMENDMENTS:
                _AMENDMENTS[name](component)
            if name in _EXAMPLES:
                component["examples"] = _EXAMPLES[name]
            _COMPONENTS[name] = component
    return {"$ref": _REF.format(model=model.__name__)}


def envelope(data: dict[str, Any]) -> dict[str, Any]:
    """Schema of a success envelope whose ``data`` has schema ``data``."""
    return {
        "type": "object",
        "required": ["code", "msg", "data"],
        "properties": {
            "code": {"type": "integer", "enum": [200]},
            "msg": {"type": "string", "enum": ["success"]},
            "data": data,
        },
    }


def operation(
    *,
    data: dict[str, Any],
    body: type[BaseModel] | None = None,
    body_required: bool = True,
    errors: tuple[int, ...] = (400,),
    extra_200: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``openapi_extra`` of one route: request body, 200 envelope, declared errors and 401."""
    content: dict[str, Any] = {"application/json": {"schema": envelope(data)}}
    content.update(extra_200 or {})
    responses: dict[str, Any] = {"200": {"description": "Success envelope.", "content": content}}
    for status in errors:
        responses[str(status)] = {
            "description": _ERROR_TEXT[status],
            "content": {"application/json": {"schema": _ERROR_ENVELOPE}},
        }
    responses["401"] = {
        "description": "Missing or invalid X-API-KEY or X-Timestamp; the body is a plain string.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
    extra: dict[str, Any] = {"responses": responses, "security": SECURITY}
    if body is not None:
        extra["requestBody"] = {
            "required": body_required,
            "content": {"application/json": {"schema": model_ref(body)}},
        }
    return extra


# ---------------------------------------------------------------------------------------------
# Links: which response values a following request can use


def _operation_ref(method: str, path: str) -> str:
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def _link(
    method: str,
    path: str,
    description: str,
    *,
    parameters: dict[str, str] | None = None,
    body: dict[str, str] | None = None,
) -> dict[str, Any]:
    link: dict[str, Any] = {"operationRef": _operation_ref(method, path), "description": description}
    if parameters:
        link["parameters"] = parameters
    if body:
        link["requestBody"] = body
    return link


_PRODUCT = "$response.body#/data/productId"
_FIRST_PRICE = "$response.body#/data/priceList/0/priceId"
_SUBSCRIPTION = "$response.body#/data/subscriptionId"

#: (method, path) of an operation -> links of its 200 response.
LINKS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("post", "/product"): {
        "PayForFirstPrice": _link(
            "post",
            "/payment",
            "Pay for the product's first price.",
            body={"productId": _PRODUCT, "priceId": _FIRST_PRICE},
        ),
        "SubscribeToFirstPrice": _link(
            "post",
            "/sandbox/subscriptions",
            "Subscribe to the first price.",
            body={"productId": _PRODUCT, "priceId": _FIRST_PRICE},
        ),
        "DeactivateFirstPrice": _link(
            "post",
            "/sandbox/prices/{priceId}/deactivate",
            "Make the first price inactive.",
            parameters={"path.priceId": _FIRST_PRICE},
        ),
    },
    ("post", "/payment"): {
        "ResolvePayment": _link(
            "post",
            "/sandbox/payments/{orderId}/resolve",
            "Settle the payment.",
            parameters={"path.orderId": "$response.body#/data/orderId"},
        ),
    },
    ("post", "/sandbox/subscriptions"): {
        "GetSubscription": _link(
            "get", "/subscription/{id}", "Read the subscription.", parameters={"path.id": _SUBSCRIPTION}
        ),
        "CancelSubscription": _link(
            "post", "/sandbox/subscriptions/{id}/cancel", "Cancel it.", parameters={"path.id": _SUBSCRIPTION}
        ),
    },
    ("get", "/subscription/{id}"): {
        "CancelSubscription": _link(
            "post", "/sandbox/subscriptions/{id}/cancel", "Cancel it.", parameters={"path.id": _SUBSCRIPTION}
        ),
    },
    ("post", "/sandbox/faults"): {
        "ListFaults": _link("get", "/sandbox/faults", "List the rules: the new one is among them."),
        "ClearFaults": _link("delete", "/sandbox/faults", "Remove every rule, the new one included."),
    },
    ("post", "/sandbox/subscriptions/{id}/cancel"): {
        "GetSubscription": _link(
            "get",
            "/subscription/{id}",
            "Read the canceled subscription.",
            parameters={"path.id": _SUBSCRIPTION},
        ),
    },
}


_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document.get("paths", {}).items():
        for method, op in item.items():
            if method in _METHODS:
                yield method, path, op


def install(app: FastAPI) -> None:
    """Replace ``app.openapi`` with one that adds components and links and drops FastAPI's 422s."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=app.version,
            routes=app.routes,
            description=f"{app.description}\n\n{RULES_BEYOND_SCHEMAS}",
        )
        for method, path, op in _operations(document):
            responses = op.get("responses", {})
            responses.pop("422", None)
            responses.pop("default", None)
            if (method, path) in LINKS:
                responses["200"]["links"] = LINKS[method, path]
        components = document.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        schemas.update(_COMPONENTS)
        components["securitySchemes"] = SECURITY_SCHEMES
        app.openapi_schema = document
        return document

    app.openapi = build  # type: ignore[method-assign]


def allowed_methods(app: FastAPI, path: str) -> str:
    """The ``Allow`` value for ``path``: the methods the document gives it, and plain routes' own."""
    methods: set[str] = set()
    for method, template, _ in _operations(app.openapi()):
        if compile_path(template)[0].match(path):
            methods.add(method.upper())
    scope = {"type": "http", "path": path, "method": "", "root_path": ""}
    for route in app.routes:  # routes outside the document, such as /openapi.json itself
        if isinstance(route, Route) and route.methods and route.matches(scope)[0] is not Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods))
