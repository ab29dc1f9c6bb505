"""Driving schemathesis' engine over the sandbox's /openapi.json (what ``st run`` drives; its pytest
loader does not run under pytest 9), and what a run did, for the tests to read."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import coverage
import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events, from_schema
from schemathesis.schemas import BaseSchema

from tests.sandbox.conftest import TEST_KEY, now_ms

SEED = 20261123
#: Headers the HTTP client writes from the request itself. Fuzzing adds undeclared headers, their
#: names drawn partly from string literals in the sandbox's source (Hypothesis reads the modules
#: loaded), and counts them as ignorable extras; but a malformed Content-Length is refused by uvicorn
#: with a 400 before the app sees it, which schemathesis then reports as a valid request refused.
FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "host", "connection"})
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

    def linked_operations(self) -> set[str]:
        """Operations a link led to, whatever they answered."""
        return {op for counter in self.linked for (op, _status) in counter}

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


def load(base_url: str, *, budget_s: int, max_examples: int) -> BaseSchema:
    """The sandbox's document, configured for every phase and every check, seeded, with both
    security schemes on every request."""
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "max-time": budget_s,
            "workers": 1,
            "cache": {"enabled": False},
            "generation": {"max-examples": max_examples, "database": "none"},
            "checks": {"enabled": True},
            "phases": {"enabled": True},
        }
    )
    schema = schemathesis.openapi.from_url(base_url + "/openapi.json", config=config)

    @schema.auth(refresh_interval=None)
    class SandboxAuth:
        """Both security schemes on every request, with a fresh X-Timestamp (the skew is limited)."""

        def get(self, case: Any, ctx: Any) -> str:
            return str(now_ms())

        def set(self, case: Any, data: str, ctx: Any) -> None:
            headers = {
                name: value
                for name, value in (case.headers or {}).items()
                if name.lower() not in FRAMING_HEADERS
            }
            case.headers = {**headers, "X-API-KEY": TEST_KEY, "X-Timestamp": data}

    return schema


def execute(schema: BaseSchema, *, enough: Callable[[Run], bool]) -> Run:
    """Run the engine over ``schema`` and record what it did, until a turn of its phases has
    done ``enough`` (or the time limit is spent).

    Given a time limit, schemathesis shares it out so that every phase has a turn (coverage a
    share of its cases), then turns fuzzing and stateful again until the limit is spent. A
    turn of the main run takes 33-40 s of its 75 s limit here, and the first one often already
    follows every link the tests assert (of five runs, two ended after one turn and three after
    two, 39-53 s in all). So the run ends after the first turn whose stateful phase left
    ``enough`` true: spending the whole limit made it the suite's longest step, 78 s.

    Coverage (``make test``) is paused meanwhile: the run is bounded in time, and a sandbox traced
    line by line in this process answers about half as many requests, so the stateful phase
    would reach fewer of the linked routes than an outside tool does.
    """
    with _coverage_paused():
        return _execute(schema, enough)


@contextlib.contextmanager
def _coverage_paused() -> Iterator[None]:
    current = coverage.Coverage.current()
    if current is None:
        yield
        return
    current.stop()
    try:
        yield
    finally:
        current.start()


def _execute(schema: BaseSchema, enough: Callable[[Run], bool]) -> Run:
    result = Run()
    started = time.monotonic()
    stream = from_schema(schema).execute()
    for event in stream:
        if isinstance(event, events.ScenarioFinished):
            _record(result, event)
        elif isinstance(event, events.PhaseStarted) and event.phase.name.value == "stateful":
            result.linked.append(Counter())
        elif isinstance(event, events.PhaseFinished):
            result.phases.setdefault(event.phase.name.value, set()).add(event.status)
            if event.phase.name.value == "stateful" and enough(result):
                stream.stop()
        elif isinstance(event, events.NonFatalError | events.FatalError):
            result.errors.append(str(getattr(event, "info", None) or getattr(event, "exception", event)))
        elif isinstance(event, events.EngineFinished):
            result.failures += [
                f"[after run] {failure.title}: {failure.message}" for failure in event.failures
            ]
    result.seconds = time.monotonic() - started
    return result
