"""Schemathesis over the fault controls alone (``/sandbox/faults``), every phase and every check.

The main run (test_schemathesis.py) leaves them out: a rule it armed would drop, hang or fail the
routes it fuzzes next. Here the sandbox is a fresh one of its own, only the controls are called (no
rule ever fires on a ``/sandbox/`` route), and a hook clears the rules after every call, so that
each call meets an empty list and nothing accumulates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from schemathesis.engine import Status

from tests.sandbox.conftest import TEST_KEY, SandboxAuth
from tests.sandbox.schemathesis_run import EVERY_CHECK, PHASES, Run, execute, load
from toolkit.sandbox.embedded import RunningSandbox, start_server

#: Wall time of the run (the whole module stays under 30 s).
BUDGET_S = 20
MAX_EXAMPLES = 40
#: The calls a link from an added rule leads to.
LINKED = frozenset({"GET /sandbox/faults", "DELETE /sandbox/faults"})


@pytest.fixture(scope="module")
def faults_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("st-faults") / "st.sqlite", api_key=TEST_KEY)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def cleared() -> list[int]:
    """How many rules each clearing after a call removed."""
    return []


@pytest.fixture(scope="module")
def run(faults_sandbox: RunningSandbox, cleared: list[int]) -> Run:
    assert faults_sandbox.base_url.startswith("http://127.0.0.1:")
    schema = load(faults_sandbox.base_url, budget_s=BUDGET_S, max_examples=MAX_EXAMPLES).include(
        path_regex=r"^/sandbox/faults$"
    )
    controls = httpx.Client(base_url=faults_sandbox.base_url, auth=SandboxAuth(TEST_KEY), timeout=10)

    @schema.hook
    def after_call(context: Any, case: Any, response: Any) -> None:
        answer = controls.delete("/sandbox/faults")
        assert answer.status_code == 200, answer.text
        cleared.append(int(answer.json()["data"]["cleared"]))

    try:
        return execute(schema, enough=lambda run: run.linked_successes() >= LINKED)
    finally:
        controls.close()


@pytest.mark.slow
def test_every_check_passes_in_every_phase(run: Run) -> None:
    assert run.errors == []
    assert run.failures == [], "\n\n".join(run.failures[:5])
    for phase in PHASES:
        assert Status.SUCCESS in run.phases.get(phase, set()), (phase, run.phases)
        assert not {Status.FAILURE, Status.ERROR} & run.phases[phase], (phase, run.phases)
    assert run.checks == EVERY_CHECK, EVERY_CHECK ^ run.checks
    assert run.seconds < BUDGET_S + 8, run.seconds


@pytest.mark.slow
def test_rules_are_added_listed_and_cleared(run: Run, cleared: list[int]) -> None:
    """Rules of every kind were accepted (the examples, then generated ones), and every call was
        followed by a clearing: at most the one rule it added was ever left to clear. (Calls the checks
    make themselves, without auth or with another method, add nothing and meet no hook.)"""
    assert 200 in run.statuses("examples", "POST /sandbox/faults")
    assert {200, 400} <= run.statuses("fuzzing", "POST /sandbox/faults") | run.statuses(
        "coverage", "POST /sandbox/faults"
    )
    assert run.linked_successes() >= LINKED, run.linked
    added = sum(
        n for (_, op, status), n in run.answers.items() if (op, status) == ("POST /sandbox/faults", 200)
    )
    assert len(cleared) >= added > 0
    assert set(cleared) <= {0, 1} and 1 in cleared, sorted(set(cleared))
