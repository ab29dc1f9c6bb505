"""Schemathesis over the sandbox's own OpenAPI document: no 500s, conforming responses, auth enforced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from tests.sandbox.conftest import TEST_KEY, now_ms
from toolkit.sandbox.embedded import RunningSandbox, start_server
from toolkit.sandbox.store import TEST_INSTRUMENTS

not_a_server_error = schemathesis.checks.not_a_server_error  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def st_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("st") / "st.sqlite", api_key=TEST_KEY)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def api_schema(st_sandbox: RunningSandbox) -> Any:
    document = httpx.get(st_sandbox.base_url + "/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document)
    schema.config.update(base_url=st_sandbox.base_url)
    return schema


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, ignored_auth]


@pytest.mark.slow
def test_api_conforms(api_schema: Any) -> None:
    """Every operation, 25 generated examples each (hypothesis directly: schemathesis' lazy pytest
    loader does not run under pytest 9)."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            case.call_and_validate(
                headers={"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms())}, checks=CHECKS
            )

        run()


def test_openapi_describes_the_spec_endpoints(st_sandbox: RunningSandbox) -> None:
    document = httpx.get(st_sandbox.base_url + "/openapi.json").json()
    paths = document["paths"]
    for path, method in (("/payment", "post"), ("/product", "post"), ("/subscription/{id}", "get")):
        operation = paths[path][method]
        assert {"200", "400", "401"} <= set(operation["responses"])
        assert operation["security"] == [{"ApiKey": [], "Timestamp": []}]
    assert "/payment" in paths and "404" in paths["/subscription/{id}"]["get"]["responses"]
    body = paths["/payment"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PaymentRequest"}
    amount = document["components"]["schemas"]["PaymentRequest"]["properties"]["amount"]
    assert "string" not in str(amount)
    assert set(TEST_INSTRUMENTS) >= {"pi_test_success", "pi_test_pending", "pi_test_failure", "pi_test_3ds"}
    assert Path(st_sandbox.db_path).exists()
