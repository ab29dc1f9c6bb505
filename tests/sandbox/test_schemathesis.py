"""Schemathesis over the sandbox's own /openapi.json, as an outside tool runs it.

Every phase (examples, coverage, fuzzing, stateful) and every check, through schemathesis' engine
(what ``st run`` drives; its pytest loader does not run under pytest 9), bounded in examples per
operation and in wall time, with a fixed seed. One run per module; the tests read what it did.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events, from_schema

from tests.sandbox.conftest import TEST_KEY, now_ms
from toolkit.sandbox.embedded import RunningSandbox, start_server

SEED = 20261123
#: Wall time of the whole run: examples and coverage run once, fuzzing and stateful fill the rest.
BUDGET_S = 75
MAX_EXAMPLES = 25
PHASES = ("examples", "coverage", "fuzzing", "stateful")
#: What ``st run --checks all`` runs (max_response_time is apart: it needs a limit).
EVERY_CHECK = frozenset(
    {
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "positive_data_acceptance",
        "missing_required_header",
        "unsupported_method",
        "allow_header_conformance",
        "use_after_free",
        "ensure_resource_availability",
        "ignored_auth",
        "object_level_authorization",
    }
)


@dataclass
class Run:
    """What one schemathesis run did: failed checks, errors, phases, and every answer by operation."""

    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    phases: dict[str, set[Status]] = field(default_factory=dict)
    answers: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    #: (operation, status) of stateful steps whose request a link filled, by stateful cycle.
    linked: list[Counter[tuple[str, int]]] = field(default_factory=list)
    checks: set[str] = field(default_factory=set)
    requests: int = 0
    seconds: float = 0.0

    def statuses(self, phase: str, operation: str) -> set[int]:
        return {status for (p, op, status) in self.answers if p == phase and op == operation}

    def linked_successes(self) -> set[str]:
        """Operations a link led to with a 2xx answer."""
        return {op for counter in self.linked for (op, status) in counter if 200 <= status < 300}


def _record(run: Run, event: events.ScenarioFinished) -> None:
    recorder = event.recorder
    phase = event.phase.value
    for case_id, interaction in recorder.interactions.items():
        if interaction.response is not None and case_id in recorder.cases:
            node = recorder.cases[case_id]
            label = node.value.operation.label
            run.answers[phase, label, interaction.response.status_code] += 1
            run.requests += 1
            if node.transition is not None and node.is_transition_applied and run.linked:
                run.linked[-1][label, interaction.response.status_code] += 1
    for checks in recorder.checks.values():
        for check in checks:
            run.checks.add(check.name)
            if check.status == Status.FAILURE and check.failure_info is not None:
                failure = check.failure_info.failure
                run.failures.append(
                    f"[{phase}] {failure.operation} {check.name}: {failure.title}\n{failure.message}\n"
                    f"{check.failure_info.code_sample}"
                )


@pytest.fixture(scope="module")
def st_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("st") / "st.sqlite", api_key=TEST_KEY)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def run(st_sandbox: RunningSandbox) -> Run:
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "max-time": BUDGET_S,
            "workers": 1,
            "cache": {"enabled": False},
            "generation": {"max-examples": MAX_EXAMPLES, "database": "none"},
            "checks": {"enabled": True},
            "phases": {"enabled": True},
        }
    )
    # The fault controls change how every other route answers (drop, hang, error): fuzzing them
    # would sabotage the rest of the run. Their validation is tested in tests/sandbox/test_faults.py.
    schema = schemathesis.openapi.from_url(st_sandbox.base_url + "/openapi.json", config=config).exclude(
        path_regex=r"^/sandbox/faults"
    )

    @schema.auth(refresh_interval=None)
    class SandboxAuth:
        """Both security schemes on every request, with a fresh X-Timestamp (the skew is limited)."""

        def get(self, case: Any, ctx: Any) -> str:
            return str(now_ms())

        def set(self, case: Any, data: str, ctx: Any) -> None:
            case.headers = {**(case.headers or {}), "X-API-KEY": TEST_KEY, "X-Timestamp": data}

    result = Run()
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            _record(result, event)
        elif isinstance(event, events.PhaseStarted) and event.phase.name.value == "stateful":
            result.linked.append(Counter())
        elif isinstance(event, events.PhaseFinished):
            result.phases.setdefault(event.phase.name.value, set()).add(event.status)
        elif isinstance(event, events.NonFatalError | events.FatalError):
            result.errors.append(str(getattr(event, "info", None) or getattr(event, "exception", event)))
        elif isinstance(event, events.EngineFinished):
            result.failures += [
                f"[after run] {failure.title}: {failure.message}" for failure in event.failures
            ]
    result.seconds = time.monotonic() - started
    return result


@pytest.mark.slow
def test_every_check_passes_in_every_phase(run: Run) -> None:
    assert run.errors == []
    assert run.failures == [], "\n\n".join(run.failures[:5])
    for phase in PHASES:  # a phase the time budget cuts short reports SKIP for that turn
        assert Status.SUCCESS in run.phases.get(phase, set()), (phase, run.phases)
        assert not {Status.FAILURE, Status.ERROR} & run.phases[phase], (phase, run.phases)
    assert run.checks == EVERY_CHECK, EVERY_CHECK ^ run.checks
    assert run.requests > 1000, run.requests
    assert run.seconds < BUDGET_S + 60, run.seconds


@pytest.mark.slow
def test_the_examples_phase_sends_the_documented_examples(run: Run) -> None:
    assert 200 in run.statuses("examples", "POST /payment")
    assert 200 in run.statuses("examples", "POST /product")


@pytest.mark.slow
def test_stateful_testing_follows_the_links_to_the_subscription_and_control_routes(run: Run) -> None:
    """A created product's ids lead to a subscription and to the price controls that succeed.

    Reading and canceling that subscription follow in later turns (how many the budget allows
    depends on the machine); tests/sandbox/test_openapi.py follows every link deterministically.
    """
    reached = run.linked_successes()
    assert {"POST /sandbox/subscriptions", "POST /sandbox/prices/{priceId}/deactivate"} <= reached, run.linked
