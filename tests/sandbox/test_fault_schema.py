"""The fault rule schema of the OpenAPI document and the sandbox agree both ways: what the schema
generates is accepted, and a body breaking any one rule is refused by both, with a 400 naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from jsonschema_rs import Draft202012Validator

from tests.sandbox.conftest import Api
from toolkit.control_models import FAULT_MODES, FaultRuleRequest
from toolkit.sandbox.embedded import RunningSandbox
from toolkit.sandbox.openapi import FAULT_EXAMPLES, fault_component

pytestmark = pytest.mark.timeout(120)

COMPONENT = "FaultRuleRequest"
#: Generated bodies per run: enough to reach every mode and both selections, a few seconds.
MAX_EXAMPLES = 150


@pytest.fixture(scope="module")
def document(sandbox: RunningSandbox) -> dict[str, Any]:
    response = httpx.get(sandbox.base_url + "/openapi.json")
    assert response.status_code == 200
    found: dict[str, Any] = response.json()
    return found


@pytest.fixture(scope="module")
def client(sandbox: RunningSandbox) -> Iterator[Api]:
    api = Api(sandbox)
    api.ok("POST", "/sandbox/reset")
    yield api
    api.close()


def _root(document: dict[str, Any]) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{COMPONENT}", "components": document["components"]}


def schema_accepts(document: dict[str, Any], body: Any) -> bool:
    """The rule schema's verdict, as schemathesis validates it (jsonschema-rs, JSON Schema 2020-12)."""
    return bool(Draft202012Validator(_root(document)).is_valid(body))


def send(api: Api, body: Any) -> httpx.Response:
    """POST /sandbox/faults with the body exactly as JSON writes it."""
    return api.http.post(
        "/sandbox/faults", content=json.dumps(body), headers={"Content-Type": "application/json"}
    )


def clear(api: Api) -> int:
    response = api.http.delete("/sandbox/faults")
    assert response.status_code == 200, response.text
    return int(response.json()["data"]["cleared"])


# ---------------------------------------------------------------------------------------------
# the shape of the document


def test_each_mode_has_its_own_schema_chosen_by_mode(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    request = schemas[COMPONENT]
    mapping = request["discriminator"]["mapping"]
    assert request["discriminator"]["propertyName"] == "mode"
    assert set(mapping) == set(FAULT_MODES)
    assert [one["$ref"] for one in request["oneOf"]] == list(mapping.values())
    for mode in FAULT_MODES:
        component = schemas[fault_component(mode)]
        assert component["additionalProperties"] is False
        assert component["properties"]["mode"]["const"] == mode
        assert component["examples"] == FAULT_EXAMPLES[mode]
        assert set(component["properties"]) == set(FaultRuleRequest.model_fields), mode
    assert schemas[fault_component("delay")]["required"] == ["route", "mode", "delayMs"]


def test_every_example_is_valid_and_accepted(client: Api, document: dict[str, Any]) -> None:
    examples = document["components"]["schemas"][COMPONENT]["examples"]
    assert {example["mode"] for example in examples} == set(FAULT_MODES)
    for example in examples:
        assert schema_accepts(document, example), example
        response = send(client, example)
        assert response.status_code == 200, (example, response.text)
    assert clear(client) == len(examples)


# ---------------------------------------------------------------------------------------------
# what the schema accepts, the sandbox accepts


def test_generated_rules_are_accepted(sandbox: RunningSandbox, client: Api, document: dict[str, Any]) -> None:
    """Bodies hypothesis draws from the document's rule schema (derandomised, bounded): each is
    valid by the schema, accepted with 200, and stored as it was sent."""
    operation = schemathesis.openapi.from_dict(document)["/sandbox/faults"]["POST"]
    seen: set[tuple[str, bool]] = set()

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def accepted(case: Any) -> None:
        body = case.body
        assert schema_accepts(document, body), body
        response = send(client, body)
        assert response.status_code == 200, (body, response.text)
        rule = response.json()["data"]
        assert (rule["route"], rule["mode"]) == (body["route"], body["mode"])
        seen.add((body["mode"], body.get("probability") is not None))
        assert clear(client) == 1

    accepted()
    assert {mode for mode, _ in seen} == set(FAULT_MODES), seen
    assert {by_chance for _, by_chance in seen} == {False, True}, seen


@pytest.mark.parametrize(
    "body",
    [
        {"route": "*", "mode": "error", "delayMs": None, "status": None, "count": None},
        {"route": "*", "mode": "drop_after_commit", "delayMs": None, "status": None, "retryAfter": None},
        {"route": "*", "mode": "error", "count": 3.0},
        {"route": "*", "mode": "error", "status": 503.0, "retryAfter": 2.0},
        {"route": "*", "mode": "delay", "delayMs": 0, "probability": 1, "seed": 0},
        {"route": "*", "mode": "error", "status": 429},
        {"route": "*", "mode": "error", "status": 503, "retryAfter": 0},
        {"route": "*", "mode": "error", "status": 408, "count": 1_000_000},
        {"route": "*", "mode": "error", "probability": 1e-9, "seed": 2**63 - 1},
    ],
)
def test_edge_rules_are_valid_and_accepted(
    client: Api, document: dict[str, Any], body: dict[str, Any]
) -> None:
    assert schema_accepts(document, body)
    response = send(client, body)
    assert response.status_code == 200, response.text
    assert clear(client) == 1


# ---------------------------------------------------------------------------------------------
# what the sandbox refuses, the schema refuses


# (the rule broken, the body, the field the 400 names)
INVALID: list[tuple[str, Any, str]] = [
    ("a body is an object", [], "body"),
    ("route is required", {"mode": "error"}, "route"),
    ("mode is required", {"route": "*"}, "mode"),
    ("route is one of four", {"route": "POST /refund", "mode": "error"}, "route"),
    ("mode is one of five", {"route": "*", "mode": "explode"}, "mode"),
    ("no unknown field", {"route": "*", "mode": "error", "times": 2}, "times"),
    ("delay needs delayMs", {"route": "*", "mode": "delay"}, "delayMs"),
    ("delay needs delayMs given", {"route": "*", "mode": "delay", "delayMs": None}, "delayMs"),
    ("delayMs at most 60 s", {"route": "*", "mode": "delay", "delayMs": 60_001}, "delayMs"),
    ("delayMs not negative", {"route": "*", "mode": "delay", "delayMs": -1}, "delayMs"),
    ("delayMs only with delay", {"route": "*", "mode": "error", "delayMs": 10}, "delayMs"),
    ("status only with error", {"route": "*", "mode": "drop_after_commit", "status": 500}, "status"),
    (
        "retryAfter only with error",
        {"route": "*", "mode": "delay", "delayMs": 1, "retryAfter": 1},
        "retryAfter",
    ),
    ("status from the allowed set", {"route": "*", "mode": "error", "status": 404}, "status"),
    ("status a JSON integer", {"route": "*", "mode": "error", "status": "503"}, "status"),
    (
        "retryAfter only with 429 or 503",
        {"route": "*", "mode": "error", "status": 500, "retryAfter": 3},
        "retryAfter",
    ),
    ("retryAfter needs a status", {"route": "*", "mode": "error", "retryAfter": 3}, "retryAfter"),
    (
        "retryAfter at most an hour",
        {"route": "*", "mode": "error", "status": 429, "retryAfter": 3601},
        "retryAfter",
    ),
    ("count at least 1", {"route": "*", "mode": "error", "count": 0}, "count"),
    ("count a JSON integer", {"route": "*", "mode": "error", "count": True}, "count"),
    ("count without a fraction", {"route": "*", "mode": "error", "count": 1.5}, "count"),
    ("probability needs seed", {"route": "*", "mode": "error", "probability": 0.5}, "seed"),
    ("seed only with probability", {"route": "*", "mode": "error", "seed": 3}, "seed"),
    ("seed not negative", {"route": "*", "mode": "error", "probability": 0.5, "seed": -1}, "seed"),
    ("probability at most 1", {"route": "*", "mode": "error", "probability": 1.5, "seed": 1}, "probability"),
    ("probability above 0", {"route": "*", "mode": "error", "probability": 0, "seed": 1}, "probability"),
    (
        "probability a JSON number",
        {"route": "*", "mode": "error", "probability": "0.5", "seed": 1},
        "probability",
    ),
    (
        "count or probability, not both",
        {"route": "*", "mode": "error", "count": 1, "probability": 0.5, "seed": 1},
        "count, probability",
    ),
]


@pytest.mark.parametrize(("rule", "body", "field"), INVALID, ids=[rule for rule, _, _ in INVALID])
def test_a_body_breaking_one_rule_is_refused_by_both(
    client: Api, document: dict[str, Any], rule: str, body: Any, field: str
) -> None:
    assert not schema_accepts(document, body), rule
    response = send(client, body)
    assert response.status_code == 400, response.text
    envelope = response.json()
    assert envelope["code"] == 400 and envelope["data"] is None
    msg = envelope["msg"]
    assert msg.startswith(f"{field}:") or f"; {field}:" in msg, msg
    assert clear(client) == 0
