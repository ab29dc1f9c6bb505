"""Schemathesis over the sandbox's own OpenAPI document: no 500s, conforming responses, auth enforced."""

from __future__ import annotations

from collections.abc import Iterator
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
