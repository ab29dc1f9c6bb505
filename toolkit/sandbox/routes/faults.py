"""Sandbox-only controls of faults on demand and of the request log (same auth as every control).

Included after every other router, so that an OpenAPI-driven fuzzer walking the document in order
reaches ``POST /sandbox/faults`` only after the API routes a rule could disturb.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from toolkit.control_models import FaultRule, FaultRuleRequest
from toolkit.sandbox import faults
from toolkit.sandbox.deps import Authenticated, DbDep, StateDep
from toolkit.sandbox.http import build, ok, read_object
from toolkit.sandbox.openapi import model_ref, operation
from toolkit.sandbox.requests_log import DEFAULT_LIMIT, LOG_SIZE

router = APIRouter(prefix="/sandbox", tags=["sandbox controls"], dependencies=[Authenticated])

_NULLABLE_STR = {"type": ["string", "null"]}
_REQUEST_RECORD = {
    "type": "object",
    "required": ["time", "method", "path", "status", "latencyMs", "merchantReferenceId", "fault", "faultId"],
    "properties": {
        "time": {"type": "integer"},
        "method": {"type": "string"},
        "path": {"type": "string"},
        "status": {"type": ["integer", "null"]},
        "latencyMs": {"type": "number"},
        "merchantReferenceId": _NULLABLE_STR,
        "fault": _NULLABLE_STR,
        "faultId": _NULLABLE_STR,
    },
}


@router.post(
    "/faults",
    summary="Add a fault rule: the next matching requests (or a seeded share of them) meet a fault",
    openapi_extra=operation(data=model_ref(FaultRule), body=FaultRuleRequest, errors=(400, 413)),
)
async def add_fault(request: Request, db: DbDep) -> Response:
    req = build(FaultRuleRequest, await read_object(request))
    faults.check_servable(req, request.scope)
    return ok(faults.add_rule(db, req))


@router.get(
    "/faults",
    summary="The fault rules, with how often each was tried and has fired",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["faults"],
            "properties": {"faults": {"type": "array", "items": model_ref(FaultRule)}},
        },
        errors=(),
    ),
)
async def list_faults(db: DbDep) -> Response:
    return ok({"faults": faults.list_rules(db)})


@router.delete(
    "/faults",
    summary="Remove every fault rule",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["cleared"],
            "properties": {"cleared": {"type": "integer"}},
        },
        errors=(),
    ),
)
async def clear_faults(db: DbDep) -> Response:
    return ok({"cleared": faults.clear_rules(db)})


@router.get(
    "/requests",
    summary="The most recent requests the sandbox received, newest first (never their headers)",
    openapi_extra=operation(
        data={
            "type": "object",
            "required": ["requests"],
            "properties": {"requests": {"type": "array", "items": _REQUEST_RECORD}},
        },
        errors=(400,),
    ),
)
async def recent_requests(
    state: StateDep,
    limit: Annotated[int, Query(ge=1, le=LOG_SIZE)] = DEFAULT_LIMIT,
) -> Response:
    return ok({"requests": state.request_log.recent(limit)})
