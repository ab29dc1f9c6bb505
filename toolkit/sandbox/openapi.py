"""The OpenAPI document: request bodies from the shared models' JSON schema, envelopes, errors.

Routes read raw bodies (for exact Decimals), so FastAPI cannot infer their schemas; each route
declares them with ``operation(...)`` and ``install(app)`` merges the collected components.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

_COMPONENTS: dict[str, Any] = {}
_REF = "#/components/schemas/{model}"

SECURITY_SCHEMES: dict[str, Any] = {
    "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"},
    "Timestamp": {
        "type": "apiKey", "in": "header", "name": "X-Timestamp",
        "description": "Current time in ms since the Unix epoch, within the sandbox's tolerance.",
    },
}
SECURITY: list[dict[str, list[str]]] = [{"ApiKey": [], "Timestamp": []}]

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


def _fix_decimals(node: Any) -> Any:
    """Pydantic writes Decimal as number-or-string; the wire type of every amount is a number."""
    if isinstance(node, list):
        return [_fix_decimals(item) for item in node]
    if not isinstance(node, dict):
        return node
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        kinds = [s.get("type") if isinstance(s, dict) else None for s in any_of]
        if "number" in kinds and "string" in kinds and set(kinds) <= {"number", "string", "null"}:
            kept = [s for s, kind in zip(any_of, kinds, strict=True) if kind != "string"]
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return {**rest, **kept[0]} if len(kept) == 1 else {**rest, "anyOf": kept}
    return {key: _fix_decimals(value) for key, value in node.items()}


def model_ref(model: type[BaseModel]) -> dict[str, Any]:
    """Register ``model`` (and the models it uses) as components; return a ``$ref`` to it."""
    schema = model.model_json_schema(ref_template=_REF, mode="validation")
    for name, definition in schema.pop("$defs", {}).items():
        _COMPONENTS.setdefault(name, _fix_decimals(definition))
    _COMPONENTS.setdefault(model.__name__, _fix_decimals(schema))
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
    *, data: dict[str, Any], body: type[BaseModel] | None = None, body_required: bool = True,
    errors: tuple[int, ...] = (400,), extra_200: dict[str, Any] | None = None,
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


def install(app: FastAPI) -> None:
    """Replace ``app.openapi`` with one that adds components and drops FastAPI's 422 responses."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        for path in document.get("paths", {}).values():
            for op in path.values():
                responses = op.get("responses", {})
                responses.pop("422", None)
                responses.pop("default", None)
        components = document.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        schemas.update(_COMPONENTS)
        components["securitySchemes"] = SECURITY_SCHEMES
        app.openapi_schema = document
        return document

    app.openapi = build  # type: ignore[method-assign]
